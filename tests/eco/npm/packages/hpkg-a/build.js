'use strict';
// install of hpkg-a: what node-gyp does, in miniature. Sources are generated in a scratch
// directory made with mkdtemp under TMPDIR, "compiled" there, and the outputs are written into
// build/ inside the package; the scratch directory is removed.
const fs = require('fs');
const os = require('os');
const path = require('path');

const scratch = fs.mkdtempSync(os.tmpdir() + '/hpkg-build-');
try {
  const src = path.join(scratch, 'addon.c');
  fs.writeFileSync(src, 'int hpkg_a(void) { return 42; }\n');
  fs.writeFileSync(path.join(scratch, 'addon.o'), fs.readFileSync(src));
  const out = path.join(__dirname, 'build');
  fs.mkdirSync(path.join(out, 'Release', 'obj'), { recursive: true });
  fs.writeFileSync(path.join(out, 'config.gypi'), JSON.stringify({ arch: os.arch() }) + '\n');
  fs.writeFileSync(path.join(out, 'Makefile'), 'all: Release/hpkg_a.node\n');
  fs.copyFileSync(path.join(scratch, 'addon.o'), path.join(out, 'Release', 'obj', 'addon.o'));
  fs.writeFileSync(path.join(out, 'Release', 'hpkg_a.node'), 'hpkg-a built for ' + os.arch() + '\n');
  console.log('hpkg-a: built');
} finally {
  fs.rmSync(scratch, { recursive: true, force: true });
}
