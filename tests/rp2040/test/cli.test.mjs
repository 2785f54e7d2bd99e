// run.mjs as a program: its exit statuses, the boot at 0x10000100 from an
// ELF's PT_LOAD segments, the refusal of a ROM call, and its ending when the
// socket's client closes (with the speed on stderr).

import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { loadSegments } from '../lib/elf.mjs';

const RUN = fileURLToPath(new URL('../run.mjs', import.meta.url));

/** A minimal ELF32 ARM with one PT_LOAD segment of `data` at `address`. */
function elf(address, data) {
  const header = Buffer.alloc(52 + 32);
  header.writeUInt32BE(0x7f454c46, 0);
  header[4] = 1; // 32-bit
  header[5] = 1; // little-endian
  header[6] = 1;
  header.writeUInt16LE(2, 16); // ET_EXEC
  header.writeUInt16LE(40, 18); // EM_ARM
  header.writeUInt32LE(1, 20);
  header.writeUInt32LE(52, 28); // e_phoff
  header.writeUInt16LE(52, 40);
  header.writeUInt16LE(32, 42); // e_phentsize
  header.writeUInt16LE(1, 44); // e_phnum
  const ph = 52;
  header.writeUInt32LE(1, ph); // PT_LOAD
  header.writeUInt32LE(header.length, ph + 4); // p_offset
  header.writeUInt32LE(address, ph + 8);
  header.writeUInt32LE(address, ph + 12);
  header.writeUInt32LE(data.length, ph + 16);
  header.writeUInt32LE(data.length, ph + 20);
  return Buffer.concat([header, data]);
}

/** A vector table at 0x10000100 (SP, reset) and the code after it. */
function image(reset, code = Buffer.alloc(0)) {
  const table = Buffer.alloc(8);
  table.writeUInt32LE(0x20001000, 0);
  table.writeUInt32LE(reset, 4);
  return elf(0x10000100, Buffer.concat([table, code]));
}

function tmp() {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'rp2040-cli-'));
}

test('the ELF loader takes the PT_LOAD segments at their load addresses', () => {
  const segments = loadSegments(new Uint8Array(image(0x10000109, Buffer.from([0xfe, 0xe7]))));
  assert.equal(segments.length, 1);
  assert.equal(segments[0].address, 0x10000100);
  assert.deepEqual([...segments[0].data.subarray(8)], [0xfe, 0xe7]);
  assert.throws(() => loadSegments(new Uint8Array(Buffer.from('not an elf at all'))), /not an ELF/);
});

test('usage errors exit 2; an unreadable or bad ELF exits 2 or 1', () => {
  const dir = tmp();
  const run = (...args) => spawnSync(process.execPath, [RUN, ...args], { encoding: 'utf8' });
  let r = run('--socket', path.join(dir, 's'), '--mode', 'loopback');
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /--elf is required/);
  r = run('--elf', 'x', '--socket', path.join(dir, 's'), '--mode', 'nope');
  assert.equal(r.status, 2);
  r = run('--elf', 'x', '--socket', path.join(dir, 's'), '--mode', 'gpio-echo');
  assert.equal(r.status, 2);
  assert.match(r.stderr, /needs --latencies/);
  fs.writeFileSync(path.join(dir, 'l.txt'), '10\nfast\n');
  r = run('--elf', 'x', '--socket', path.join(dir, 's'), '--mode', 'gpio-echo', '--latencies', path.join(dir, 'l.txt'));
  assert.equal(r.status, 2);
  assert.match(r.stderr, /l.txt:2: 'fast'/);
  fs.writeFileSync(path.join(dir, 'bad.elf'), 'garbage');
  r = run('--elf', path.join(dir, 'bad.elf'), '--socket', path.join(dir, 's'), '--mode', 'loopback');
  assert.equal(r.status, 1);
  assert.match(r.stderr, /not an ELF/);
});

test('a reset vector into the boot ROM is refused (exit 3): there is no boot ROM image', () => {
  const dir = tmp();
  fs.writeFileSync(path.join(dir, 'rom.elf'), image(0x00000101));
  const r = spawnSync(
    process.execPath,
    [RUN, '--elf', path.join(dir, 'rom.elf'), '--socket', path.join(dir, 's'), '--mode', 'loopback', '--max-seconds', '20'],
    { encoding: 'utf8' },
  );
  assert.equal(r.status, 3, r.stderr);
  assert.match(r.stderr, /refused: the core jumped to 0x100 \(boot ROM/);
});

test('it boots the vector table at 0x10000100, serves one client and exits 0 when it closes, with its speed', async () => {
  const dir = tmp();
  const sock = path.join(dir, 's');
  // reset: 0x10000109 (Thumb), `b .` at 0x10000108
  fs.writeFileSync(path.join(dir, 'spin.elf'), image(0x10000109, Buffer.from([0xfe, 0xe7])));
  const child = spawn(process.execPath, [RUN, '--elf', path.join(dir, 'spin.elf'), '--socket', sock, '--mode', 'loopback', '--max-seconds', '30']);
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  for (let i = 0; i < 500 && !fs.existsSync(sock); i++) await new Promise((r) => setTimeout(r, 20));
  const client = net.connect(sock);
  await new Promise((resolve, reject) => {
    client.on('connect', resolve);
    client.on('error', reject);
  });
  await new Promise((r) => setTimeout(r, 300));
  client.end();
  assert.equal(await exited, 0, stderr);
  assert.match(stderr, /speed: [\d.]+ s simulated in [\d.]+ s wall = [\d.]+ simulated s per wall s/);
});

test("the usage line names the harness's silicon options", () => {
  const r = spawnSync(process.execPath, [RUN], { encoding: 'utf8' });
  assert.equal(r.status, 2);
  for (const option of [
    '--xip-miss-ns N',
    '--forbid-xip-fetch',
    '--input-sync-clocks N',
    '--usb-no-dtr',
    '--usb-stop-reading-after N',
    '--usb-close-after N',
    '--pad-report FILE',
  ]) {
    assert.ok(r.stderr.includes(`[${option}]`), `${option} in ${r.stderr}`);
  }
  const bad = spawnSync(process.execPath, [RUN, '--elf', 'x', '--socket', 's', '--mode', 'loopback', '--input-sync-clocks=-1'], {
    encoding: 'utf8',
  });
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /--input-sync-clocks -1: not a valid number/);
});

test('--forbid-xip-fetch exits 3 naming the PC; --xip-miss-ns reports the misses; --pad-report is written at exit', () => {
  // Flash: store `bx lr` at 0x20000000, call it, return to `b .` in flash at 0x10000112.
  const code = Buffer.alloc(20);
  [0x4802, 0x4903, 0x6001, 0x3001, 0x4780, 0xe7fe].forEach((half, i) => code.writeUInt16LE(half, 2 * i));
  code.writeUInt32LE(0x20000000, 12); // at 0x10000114
  code.writeUInt32LE(0x4770, 16); // at 0x10000118
  const dir = tmp();
  fs.writeFileSync(path.join(dir, 'ram.elf'), image(0x10000109, code));
  const pads = path.join(dir, 'pads.json');
  const r = spawnSync(
    process.execPath,
    [RUN, '--elf', path.join(dir, 'ram.elf'), '--socket', path.join(dir, 's'), '--mode', 'loopback', '--max-seconds', '20',
      '--forbid-xip-fetch', '--xip-miss-ns', '1000', '--pad-report', pads],
    { encoding: 'utf8' },
  );
  assert.equal(r.status, 3, r.stderr);
  assert.match(r.stderr, /refused: --forbid-xip-fetch: an instruction fetched from XIP flash at PC 0x10000112 .*SRAM, at 0x20000000/);
  assert.match(r.stderr, /XIP cache: [1-9]\d* miss\(es\)/);
  const report = JSON.parse(fs.readFileSync(pads, 'utf8'));
  assert.equal(report.gpio.length, 30);
  assert.equal(report.gpio[29].pad, 0x56);
});
