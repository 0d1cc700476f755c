// Expected decodings and offsets from Hugging Face's Rust `tokenizers`
// library (its Node binding, npm `tokenizers` 0.23.2, pinned in
// package.json), for tests/tokenizer/test_tk_decoders.c; run by hand, not in
// CI:
//   cd tools/tokenize_ref && npm install --ignore-scripts
//   /usr/bin/python3 materialize.py /tmp/tk
//   node decode_ref.mjs /tmp/tk
// Writes tests/data/tokenize/decode/<family>.json.xz (xz.mjs): for every text of
// texts_families.json (by index), with the default add_special_tokens:
//   "text": tokenizer.decode(ids, false), "skip": decode(ids, true);
// "offsets": the encoding's offsets (Unicode code points of the text); and
// for the first STRINGS texts also
//   "one": decode([id]) for each id, "pair": decode([ids[i-1], ids[i]])
//   for i >= 1 (the C side derives the display strings from these two, so
//   the reference holds only what the Rust library returns).
// The ids themselves are tests/data/tokenize/<family>.json.xz's. As Python
// transformers' GPTNeoXTokenizerFast does at load (update_post_processor),
// and attngeom's loader with it, a GPTNeoXTokenizer folder's post-processor
// becomes the template of add_bos_token/add_eos_token ("$A" here: both
// false), which keeps offsets untrimmed where tokenizer.json's ByteLevel
// processor would trim them.
import { Tokenizer, templateProcessing } from 'tokenizers';
import fs from 'fs';
import path from 'path';
import { fileURLToPath } from 'url';
import { readXz, writeXz } from './xz.mjs';

const STRINGS = 80;
const here = path.dirname(fileURLToPath(import.meta.url));
const [dir] = process.argv.slice(2);
const texts = JSON.parse(fs.readFileSync(path.join(here, 'texts_families.json'), 'utf8'));
const outDir = path.join(here, '..', '..', 'tests', 'data', 'tokenize', 'decode');
const idsFile = (f) => path.join(here, '..', '..', 'tests', 'data', 'tokenize', f + '.json.xz');
const families = fs.readdirSync(dir).filter((f) => fs.existsSync(path.join(dir, f, 'tokenizer.json'))
  && fs.existsSync(idsFile(f)) && JSON.parse(readXz(idsFile(f))).length === texts.length).sort();
for (const fam of families) {
  const tok = await Tokenizer.fromFile(path.join(dir, fam, 'tokenizer.json'));
  const cfg = JSON.parse(fs.readFileSync(path.join(dir, fam, 'tokenizer_config.json'), 'utf8'));
  if (/^GPTNeoXTokenizer(Fast)?$/.test(cfg.tokenizer_class || '')) {
    if (cfg.add_bos_token || cfg.add_eos_token) throw new Error(`${fam}: bos/eos template not written here`);
    tok.setPostProcessor(templateProcessing('$A'));
  }
  const expected = JSON.parse(readXz(idsFile(fam)));
  const rows = [];
  for (let k = 0; k < texts.length; k++) {
    const enc = await tok.encode(texts[k], null, { addSpecialTokens: true });
    const ids = Array.from(enc.getIds());
    if (JSON.stringify(ids) !== JSON.stringify(expected[k].ids))
      continue; // only texts whose ids the Rust library agrees on
    const row = { i: k, text: await tok.decode(ids, false), skip: await tok.decode(ids, true) };
    if (k < STRINGS) {
      row.one = [];
      row.pair = [];
      for (let i = 0; i < ids.length; i++) {
        row.one.push(await tok.decode([ids[i]], false));
        if (i > 0) row.pair.push(await tok.decode([ids[i - 1], ids[i]], false));
      }
    }
    row.offsets = enc.getOffsets();
    rows.push(row);
  }
  writeXz(path.join(outDir, fam + '.json.xz'), '[\n' + rows.map((r) => JSON.stringify(r)).join(',\n') + '\n]\n');
  console.log(`${fam}: ${rows.length} of ${texts.length} texts`);
}
