// Compares the committed expected ids of tests/data/tokenize/<family>.json.xz
// with Hugging Face's Rust `tokenizers` library (its Node binding, npm
// package `tokenizers`), run by hand, not in CI:
//   cd tools/tokenize_ref && npm install --ignore-scripts
//   /usr/bin/python3 materialize.py /tmp/tk llama3.1
//   node rust_check.mjs /tmp/tk llama3.1 [FAMILY ...]
// Prints, per family, how many of the texts give the same ids
// (add_special_tokens=True); exits 1 when any differs.
import { Tokenizer } from 'tokenizers';
import path from 'path';
import { fileURLToPath } from 'url';
import { readXz } from './xz.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const [dir, ...families] = process.argv.slice(2);
let failed = 0;
for (const fam of families) {
  const tok = await Tokenizer.fromFile(path.join(dir, fam, 'tokenizer.json'));
  const file = path.join(here, '..', '..', 'tests', 'data', 'tokenize', fam + '.json.xz');
  const cases = JSON.parse(readXz(file));
  let same = 0;
  for (const c of cases) {
    const ids = Array.from((await tok.encode(c.text, null, { addSpecialTokens: true })).getIds());
    if (JSON.stringify(ids) === JSON.stringify(c.ids)) same++;
    else if (failed++ < 5) console.log(`${fam}: ${JSON.stringify(c.text)}\n  rust ${ids}\n  file ${c.ids}`);
  }
  console.log(`${fam}: ${same} of ${cases.length} texts give the Rust library's ids`);
}
process.exit(failed ? 1 : 0);
