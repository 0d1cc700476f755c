// The Rust `tokenizers` library's ids (its Node binding, npm `tokenizers`)
// for every text of a JSON list through one tokenizer folder:
//   node rust_vocab.mjs FOLDER TEXTS_JSON
// prints a JSON list of {"text", "ids", "ids_plain"}: encode(text) with
// addSpecialTokens true and false. NODE_PATH may name the node_modules
// holding `tokenizers` (tests/ref/check_vocab.py sets it).
//
// Like transformers (and attngeom), the fast tokenizer classes that rebuild
// their post-processor from tokenizer_config.json's add_bos_token /
// add_eos_token get it rebuilt here: transformers'
// models/llama/tokenization_llama_fast.py, update_post_processor() (same in
// Gemma's and GPT-NeoX's) — a TemplateProcessing "bos:0 $A:0 eos:0" with
// the absent ends left out. Other folders use tokenizer.json's own.
import { createRequire } from 'module';
import fs from 'fs';
import path from 'path';

const require = createRequire(import.meta.url);
const { Tokenizer, templateProcessing } = require('tokenizers');
const CLASSES = { LlamaTokenizer: [true, false, '<s>', '</s>'], CodeLlamaTokenizer: [true, false, '<s>', '</s>'],
  GemmaTokenizer: [true, false, '<bos>', '<eos>'], GPTNeoXTokenizer: [false, false, '<|endoftext|>', '<|endoftext|>'] };

function content(t, dflt) { return t == null ? dflt : (typeof t === 'string' ? t : t.content); }

function rebuildPostProcessor(tok, folder) {
  const file = path.join(folder, 'tokenizer_config.json');
  if (!fs.existsSync(file)) return;
  const cfg = JSON.parse(fs.readFileSync(file, 'utf8'));
  const cls = CLASSES[(cfg.tokenizer_class || '').replace(/Fast$/, '')];
  if (!cls) return;
  const bos = typeof cfg.add_bos_token === 'boolean' ? cfg.add_bos_token : cls[0];
  const eos = typeof cfg.add_eos_token === 'boolean' ? cfg.add_eos_token : cls[1];
  const parts = [], specials = [];
  for (const [on, name] of [[bos, content(cfg.bos_token, cls[2])], [eos, content(cfg.eos_token, cls[3])]]) {
    if (!on) continue;
    const id = tok.tokenToId(name);
    if (id == null) throw new Error(`${name} is not in the vocabulary`);
    specials.push([name, id]);
  }
  if (bos) parts.push(specials[0][0] + ':0');
  parts.push('$A:0');
  if (eos) parts.push(specials[specials.length - 1][0] + ':0');
  tok.setPostProcessor(templateProcessing(parts.join(' '), null, specials));
}

const [folder, textsFile] = process.argv.slice(2);
const tok = Tokenizer.fromFile(path.join(folder, 'tokenizer.json'));
rebuildPostProcessor(tok, folder);
const texts = JSON.parse(fs.readFileSync(textsFile, 'utf8'));
const out = [];
for (const text of texts) {
  const a = await tok.encode(text, null, { addSpecialTokens: true });
  const b = await tok.encode(text, null, { addSpecialTokens: false });
  out.push({ text, ids: Array.from(a.getIds()), ids_plain: Array.from(b.getIds()) });
}
process.stdout.write(JSON.stringify(out));
