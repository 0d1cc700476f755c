// Encodes tools/tokenize_ref/texts_families.json with transformers.js for every
// family folder materialized under DIR (default build/tokenize_ref/tokenizers),
// and with the vocabulary packages where one exists (llama-tokenizer-js for the
// LLaMA-2 vocabulary, js-tiktoken for cl100k_base). Writes
// build/tokenize_ref/{tjs,pkg}/<family>.json (one id list per text); the
// expected ids themselves are written by make_expected.py from the Python
// reference. Run through regen.sh (not in CI):
//   cd tools/tokenize_ref && npm install --ignore-scripts && sh regen.sh
import { AutoTokenizer, env } from '@huggingface/transformers';
import llamaTokenizer from 'llama-tokenizer-js';
import { getEncoding } from 'js-tiktoken';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..', '..');
const dir = path.resolve(process.argv[2] ?? path.join(root, 'build', 'tokenize_ref', 'tokenizers'));
const out = path.join(root, 'build', 'tokenize_ref');
const texts = JSON.parse(fs.readFileSync(path.join(here, 'texts_families.json'), 'utf8'));
const families = fs.readdirSync(dir).filter((f) => fs.existsSync(path.join(dir, f, 'tokenizer.json'))).sort();

env.allowRemoteModels = false;
env.allowLocalModels = true;
env.localModelPath = dir + path.sep;
fs.mkdirSync(path.join(out, 'tjs'), { recursive: true });
fs.mkdirSync(path.join(out, 'pkg'), { recursive: true });
const write = (sub, family, ids) =>
  fs.writeFileSync(path.join(out, sub, `${family}.json`), JSON.stringify(ids) + '\n');

for (const family of families) {
  const tok = await AutoTokenizer.from_pretrained(family, { local_files_only: true });
  write('tjs', family, texts.map((t) => Array.from(tok.encode(t), Number)));
  console.log(`transformers.js: ${family}`);
}
// llama-tokenizer-js: LLaMA-1/2 SentencePiece, <s> first, a space prepended,
// special-token strings encoded as plain text (the legacy layout's behaviour).
write('pkg', 'llama2-legacy', texts.map((t) => llamaTokenizer.encode(t, true, true, false)));
// js-tiktoken cl100k_base with every special token allowed (tiktoken ids).
const cl100k = getEncoding('cl100k_base');
write('pkg', 'llama3', texts.map((t) => cl100k.encode(t, 'all')));
const v = (p) => JSON.parse(fs.readFileSync(path.join(here, 'node_modules', p, 'package.json'), 'utf8')).version;
fs.writeFileSync(path.join(out, 'versions.json'), JSON.stringify({
  '@huggingface/transformers': v('@huggingface/transformers'),
  '@huggingface/tokenizers': v('@huggingface/tokenizers'),
  'llama-tokenizer-js': v('llama-tokenizer-js'), 'js-tiktoken': v('js-tiktoken'),
  node: process.version }) + '\n');
console.log(`llama-tokenizer-js, js-tiktoken: done (${texts.length} texts)`);
