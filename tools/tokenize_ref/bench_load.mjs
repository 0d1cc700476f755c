// The Rust `tokenizers` library (Node binding) loading one tokenizer.json,
// for `make bench` (bench/bench_tokenizer.c loads the same file in attngeom):
//   node tools/tokenize_ref/bench_load.mjs TOKENIZER_JSON [REPEATS]
// prints "vocab N cpu_seconds S wall_seconds W": the vocabulary size (added
// tokens included) and the process CPU time and wall time of the fastest of
// REPEATS Tokenizer.fromFile calls. NODE_PATH may name the node_modules
// holding `tokenizers`.
import { createRequire } from 'module';

const require = createRequire(import.meta.url);
const { Tokenizer } = require('tokenizers');
const [file, repeats = '3'] = process.argv.slice(2);
if (!file) {
  console.error('usage: node bench_load.mjs TOKENIZER_JSON [REPEATS]');
  process.exit(2);
}
let cpu = Infinity, wall = Infinity, n = 0;
for (let r = 0; r < Number(repeats); r++) {
  const c0 = process.cpuUsage(), w0 = process.hrtime.bigint();
  const tok = Tokenizer.fromFile(file);
  const dc = process.cpuUsage(c0), dw = Number(process.hrtime.bigint() - w0) / 1e9;
  cpu = Math.min(cpu, (dc.user + dc.system) / 1e6);
  wall = Math.min(wall, dw);
  n = tok.getVocabSize(true);
}
console.log(`vocab ${n} cpu_seconds ${cpu} wall_seconds ${wall}`);
