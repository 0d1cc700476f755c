// transformers.js on one text, for `make bench` (bench/bench_tokenizer_speed.c
// runs it on the same text and tokenizer folder as attngeom):
//   node tools/tokenize_ref/bench_tokenize.mjs FOLDER TEXT_FILE [REPEATS]
// prints "ids N cpu_seconds S": the ids of encode(text) (special tokens
// included) and the process CPU time of the fastest of REPEATS encodes
// (loading excluded). Needs `npm install --ignore-scripts` in this folder.
import { AutoTokenizer, env } from '@huggingface/transformers';
import fs from 'node:fs';
import path from 'node:path';

const [folder, textFile, repeats = '3'] = process.argv.slice(2);
if (!folder || !textFile) {
  console.error('usage: node bench_tokenize.mjs FOLDER TEXT_FILE [REPEATS]');
  process.exit(2);
}
const abs = path.resolve(folder);
env.allowRemoteModels = false;
env.allowLocalModels = true;
env.localModelPath = path.dirname(abs) + path.sep;
const tok = await AutoTokenizer.from_pretrained(path.basename(abs), { local_files_only: true });
const text = fs.readFileSync(textFile, 'utf8');
let best = Infinity;
let n = 0;
for (let r = 0; r < Number(repeats); r++) {
  const t0 = process.cpuUsage();
  const ids = tok.encode(text);
  const dt = process.cpuUsage(t0);
  best = Math.min(best, (dt.user + dt.system) / 1e6);
  n = ids.length;
}
console.log(`ids ${n} cpu_seconds ${best}`);
