// Boots a pico-w firmware image in rp2040js, the RP2040 emulator, with UART0 on stdio:
// bytes on stdin go to the firmware's RX, bytes it sends go to stdout. The Go test
// (runner/wire/rp2040js_test.go) speaks the framed protocol over this pipe.
//
//   node firmware/tools/rp2040js/run.mjs MODULE_DIR IMAGE.uf2
//
// MODULE_DIR is where `npm ci` installed this folder's package.json (the test uses
// .cache/rp2040js). The UF2 is loaded into the emulated flash block by block, checking each
// block's magic numbers and family ID (0xe48bff56, RP2040) as the bootloader would. rp2040js
// has no bootrom image, so the bootrom's last step is played here: boot2's CRC-32 is checked,
// its 256 bytes are copied to 0x20041f00 and the core starts there; boot2 sets up the XIP SSI
// (which rp2040js does not model: its flash is always readable) and enters the image's
// vector table at 0x10000100.
// Diagnostics go to stderr. With PQREPRO_MARKER_GPIO=N in the environment, the rising edges
// of GPIO N (the firmware's LOOP marker) are counted and reported on stderr when stdin ends,
// as "marker gpioN: K rising edges".
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [moduleDir, imagePath] = process.argv.slice(2);
if (!moduleDir || !imagePath) {
  process.stderr.write('usage: run.mjs MODULE_DIR IMAGE.uf2\n');
  process.exit(2);
}
const entry = join(moduleDir, 'node_modules', 'rp2040js', 'dist', 'esm', 'index.js');
const { Simulator, ConsoleLogger, LogLevel } = await import(pathToFileURL(entry).href);

const FLASH = 0x10000000;
const uf2 = readFileSync(imagePath);
if (uf2.length === 0 || uf2.length % 512 !== 0) {
  process.stderr.write(`run.mjs: ${imagePath}: not a UF2 file (${uf2.length} bytes)\n`);
  process.exit(2);
}
const sim = new Simulator();
const mcu = sim.rp2040;
mcu.logger = new ConsoleLogger(LogLevel.Error);
for (let off = 0; off < uf2.length; off += 512) {
  const magic0 = uf2.readUInt32LE(off), magic1 = uf2.readUInt32LE(off + 4), end = uf2.readUInt32LE(off + 508);
  const flags = uf2.readUInt32LE(off + 8), addr = uf2.readUInt32LE(off + 12), size = uf2.readUInt32LE(off + 16);
  const family = uf2.readUInt32LE(off + 28);
  if (magic0 !== 0x0a324655 || magic1 !== 0x9e5d5157 || end !== 0x0ab16f30) {
    process.stderr.write(`run.mjs: block ${off / 512}: bad magic numbers\n`);
    process.exit(2);
  }
  if (!(flags & 0x2000) || family !== 0xe48bff56) {
    process.stderr.write(`run.mjs: block ${off / 512}: not an RP2040 block (flags ${flags.toString(16)}, family ${family.toString(16)})\n`);
    process.exit(2);
  }
  if (addr < FLASH || addr + size > FLASH + mcu.flash.length || size > 476) {
    process.stderr.write(`run.mjs: block ${off / 512}: address ${addr.toString(16)} size ${size} outside flash\n`);
    process.exit(2);
  }
  mcu.flash.set(uf2.subarray(off + 32, off + 32 + size), addr - FLASH);
}

// Received bytes arrive as on a real 115200-baud line, one every 10 bit times of simulated
// time (8N1): rp2040js's UART takes whatever it is fed at once into a 32-byte FIFO and
// drops the rest, which no real sender can do to it.
const uart = mcu.uart[0];
uart.onByte = (b) => process.stdout.write(Uint8Array.of(b));
const BYTE_NANOS = 1e9 * 10 / 115200;
const rxQueue = [];
let rxPending = false; // (the alarm's own flag stays set after it has fired)
const rxAlarm = sim.clock.createAlarm(() => {
  rxPending = false;
  if (rxQueue.length > 0 && !uart.rxFIFO.full) uart.feedByte(rxQueue.shift());
  if (rxQueue.length > 0) {
    rxPending = true;
    rxAlarm.schedule(BYTE_NANOS);
  }
});
process.stdin.on('data', (chunk) => {
  for (const b of chunk) rxQueue.push(b);
  if (!rxPending) {
    rxPending = true;
    rxAlarm.schedule(BYTE_NANOS);
  }
});
const markerPin = process.env.PQREPRO_MARKER_GPIO;
let markerEdges = 0;
if (markerPin !== undefined) {
  mcu.gpio[Number(markerPin)].addListener((state, old) => {
    if (state === 1 && old !== 1) markerEdges++; // GPIOPinState.High
  });
}
process.stdin.on('end', () => {
  sim.stop();
  if (markerPin !== undefined) process.stderr.write(`marker gpio${markerPin}: ${markerEdges} rising edges\n`);
  process.exit(0);
});
// The bootrom's part: check boot2's CRC-32 (polynomial 0x04c11db7, not reflected, init
// 0xffffffff, no final XOR, stored little-endian after the first 252 bytes), copy the 256
// bytes to the top of SRAM (0x20041f00) and run them there.
const BOOT2_SRAM = 0x20041f00;
let crc = 0xffffffff;
for (let i = 0; i < 252; i++) {
  crc ^= mcu.flash[i] << 24;
  for (let k = 0; k < 8; k++) crc = crc & 0x80000000 ? (crc << 1) ^ 0x04c11db7 : crc << 1;
  crc >>>= 0;
}
const stored = (mcu.flash[252] | (mcu.flash[253] << 8) | (mcu.flash[254] << 16) | (mcu.flash[255] << 24)) >>> 0;
if (crc !== stored) {
  process.stderr.write(`run.mjs: boot2 checksum ${stored.toString(16)} does not match ${crc.toString(16)}: the bootrom would not run it\n`);
  process.exit(3);
}
mcu.sram.set(mcu.flash.subarray(0, 256), BOOT2_SRAM - 0x20000000);
mcu.core.PC = BOOT2_SRAM;
sim.execute();
