// Produces the expected token ids of tests/data/tokenize/<model>.json.xz with
// transformers.js, and checks the fixture ids of tests/data/tokenize/fixtures.
// Run by hand (not in CI):
//   cd tools/tokenize_ref && npm install --ignore-scripts && node gen.mjs
// (--ignore-scripts: onnxruntime-node's install script downloads binaries the
// tokenizers do not need.) `node gen.mjs --check` only compares, writes nothing.
import { AutoTokenizer, env } from '@huggingface/transformers';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { readXz, writeXz } from './xz.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..', '..');
const checkOnly = process.argv.includes('--check');

env.allowRemoteModels = false;
env.allowLocalModels = true;
// Each model's tokenizer folder, relative to the repository root.
const folders = {
  'tiny-gpt2': 'models/tiny-gpt2',
  'tiny-llama': 'tests/data/tokenizers/tiny-llama',
  'tiny-bert': 'tests/data/models/tiny-bert',
};

const models = Object.keys(folders);
const texts = JSON.parse(fs.readFileSync(path.join(here, 'texts.json'), 'utf8'));
const version = (p) =>
  JSON.parse(fs.readFileSync(path.join(here, 'node_modules', p, 'package.json'), 'utf8')).version;
console.log(`@huggingface/transformers ${version('@huggingface/transformers')}, ` +
            `@huggingface/tokenizers ${version('@huggingface/tokenizers')}, node ${process.version}`);

let failures = 0;
for (const model of models) {
  // transformers.js resolves a model id of one path segment under localModelPath.
  env.localModelPath = path.join(root, path.dirname(folders[model])) + path.sep;
  const tok = await AutoTokenizer.from_pretrained(path.basename(folders[model]), { local_files_only: true });
  const enc = (text) => Array.from(tok.encode(text), Number); // default add_special_tokens=true

  const fxdir = path.join(root, 'tests', 'data', 'tokenize', 'fixtures', model);
  for (const f of fs.existsSync(fxdir) ? fs.readdirSync(fxdir).sort() : []) {
    const fx = JSON.parse(fs.readFileSync(path.join(fxdir, f), 'utf8'));
    const got = enc(fx.text);
    const ok = JSON.stringify(got) === JSON.stringify(fx.ids);
    if (!ok) failures++;
    console.log(`${model}/${f}: ${ok ? 'matches' : 'DIFFERS: ' + JSON.stringify(got)}`);
  }

  const out = texts.map((text) => ({ text, ids: enc(text) }));
  const file = path.join(root, 'tests', 'data', 'tokenize', `${model}.json.xz`);
  if (checkOnly) {
    const old = fs.existsSync(file) ? JSON.parse(readXz(file)) : [];
    const same = JSON.stringify(old) === JSON.stringify(out);
    if (!same) failures++;
    console.log(`${file}: ${same ? 'up to date' : 'DIFFERS'}`);
  } else {
    const body = '[\n' + out.map((r) => ' ' + JSON.stringify(r)).join(',\n') + '\n]\n';
    writeXz(file, body);
    console.log(`wrote ${file} (${out.length} texts)`);
  }
}
process.exit(failures ? 1 : 0);
