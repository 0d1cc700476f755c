// xz.mjs — reading and writing the expected files of tests/data/tokenize/,
// stored `xz -9e` to keep the repository's data small. Node has no xz codec:
// these run the xz program (xz-utils), whose output is byte for byte what the
// Python generators write (materialize.write_xz), so regenerating an
// unchanged file changes nothing.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';

const MAX = 1 << 28; // largest decompressed file accepted (256 MiB)

// The text of the .xz file `file` (xz checks its integrity; throws if not).
export function readXz(file) {
  return execFileSync('xz', ['-dc', '--', file], { encoding: 'utf8', maxBuffer: MAX });
}

// Writes the text `body` to `file` as xz -9e.
export function writeXz(file, body) {
  fs.writeFileSync(file, execFileSync('xz', ['-9e', '-c'], { input: body, maxBuffer: MAX }));
}
