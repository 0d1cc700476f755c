// whisper_features.mjs — log-mel features of a WAV by transformers.js
// (@huggingface/transformers 3, its WhisperFeatureExtractor: an engine
// independent of attngeom and of Hugging Face's Python), written as the
// first FRAMES columns of the (80, 3000) features, float32 .npy.
// Made once; the output is committed as a fixture (make test needs no npm):
//   npm install --ignore-scripts @huggingface/transformers@3
//   node tests/ref/tjs/whisper_features.mjs tests/data/audio/chirp_noise_2s3.wav 400 \
//       tests/data/audio/chirp_noise_2s3.tjs.npy
// The WAV must be 16-bit PCM mono at 16 kHz; samples are s / 32768 as
// Hugging Face's route reads them (soundfile).
import fs from 'fs';
import { WhisperFeatureExtractor } from '@huggingface/transformers';

const [wavPath, framesArg, outPath] = process.argv.slice(2);
const frames = Number(framesArg);
const wav = fs.readFileSync(wavPath);
let off = 12, pcm = null;
while (off + 8 <= wav.length) { // RIFF chunks: find "data"
    const id = wav.toString('ascii', off, off + 4), size = wav.readUInt32LE(off + 4);
    if (id === 'data') { pcm = wav.subarray(off + 8, off + 8 + size); break; }
    off += 8 + size + (size & 1);
}
const audio = new Float32Array(pcm.length / 2);
for (let i = 0; i < audio.length; i++) audio[i] = pcm.readInt16LE(2 * i) / 32768;
const fe = new WhisperFeatureExtractor({
    feature_size: 80, sampling_rate: 16000, hop_length: 160, chunk_length: 30, n_fft: 400,
    padding_value: 0.0, nb_max_frames: 3000, n_samples: 480000,
});
const { input_features: f } = await fe._call(audio);
const [, mels, total] = f.dims;
const out = new Float32Array(mels * frames);
for (let r = 0; r < mels; r++)
    for (let c = 0; c < frames; c++) out[r * frames + c] = f.data[r * total + c];
let header = `{'descr': '<f4', 'fortran_order': False, 'shape': (${mels}, ${frames}), }`;
header += ' '.repeat(63 - ((10 + header.length) % 64)) + '\n';
const head = Buffer.alloc(10);
head.write('\x93NUMPY', 0, 'latin1'); head[6] = 1; head[7] = 0; head.writeUInt16LE(header.length, 8);
fs.writeFileSync(outPath, Buffer.concat([head, Buffer.from(header, 'latin1'), Buffer.from(out.buffer)]));
console.log(`${outPath}: (${mels}, ${frames}) of (${mels}, ${total})`);
