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
import { predecode, sramFastPath } from './decode.mjs';

const usage = 'usage: run.mjs [--baud N] [--loop batch|stock] [--stats] [--spans] MODULE_DIR IMAGE.uf2\n';
const opts = { baud: 0, loop: 'batch', stats: false, spans: false };
const args = [];
for (let i = 2; i < process.argv.length; i++) {
  const a = process.argv[i];
  if (a === '--baud' && /^[0-9]+$/.test(process.argv[i + 1] ?? '')) opts.baud = Number(process.argv[++i]);
  else if (a === '--loop' && ['batch', 'stock'].includes(process.argv[i + 1])) opts.loop = process.argv[++i];
  else if (a === '--stats') opts.stats = true;
  else if (a === '--spans') opts.spans = true;
  else if (a.startsWith('--')) {
    process.stderr.write(usage);
    process.exit(2);
  } else args.push(a);
}
const [moduleDir, imagePath] = args;
if (!moduleDir || !imagePath || args.length !== 2) {
  process.stderr.write(usage);
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

// Bytes sent go to stdout a line at a time (and whatever is left at the end of a batch).
const uart = mcu.uart[0];
const txBuf = [];
const flushTx = () => {
  if (txBuf.length > 0) {
    process.stdout.write(Uint8Array.from(txBuf));
    txBuf.length = 0;
  }
};
uart.onByte = (b) => {
  txBuf.push(b);
  if (b === 10) flushTx();
};
// Received bytes: rp2040js's UART takes whatever it is fed at once into a 32-byte FIFO and
// drops the rest, which no real sender can do to it. With --baud N they arrive as on a real
// N-baud 8N1 line, one every 10 bit times of simulated time; with --baud 0 (the default)
// each is fed as soon as the FIFO has room, as a sender under hardware flow control would at
// an unbounded rate. Neither changes a count: the firmware masks the UART interrupt in its
// timed regions and restarts SysTick's phase at their start.
const rxQueue = [];
let rxHead = 0;
const rxWaiting = () => rxHead < rxQueue.length;
const takeRx = () => {
  const b = rxQueue[rxHead++];
  if (rxHead === rxQueue.length) {
    rxQueue.length = 0;
    rxHead = 0;
  }
  return b;
};
const feedRx = () => {
  while (rxWaiting() && !uart.rxFIFO.full) uart.feedByte(takeRx());
};
let rxPending = false; // (the alarm's own flag stays set after it has fired)
const BYTE_NANOS = opts.baud > 0 ? 1e9 * 10 / opts.baud : 0;
const rxAlarm = sim.clock.createAlarm(() => {
  rxPending = false;
  if (rxWaiting() && !uart.rxFIFO.full) uart.feedByte(takeRx());
  if (rxWaiting()) {
    rxPending = true;
    rxAlarm.schedule(BYTE_NANOS);
  }
});
let wake = null; // resumes the loop when it stopped for want of input
process.stdin.on('data', (chunk) => {
  for (const b of chunk) rxQueue.push(b);
  if (BYTE_NANOS > 0 && !rxPending) {
    rxPending = true;
    rxAlarm.schedule(BYTE_NANOS);
  }
  if (wake) {
    const w = wake;
    wake = null;
    w();
  }
});
const markerPin = process.env.PQREPRO_MARKER_GPIO;
let markerEdges = 0;
if (markerPin !== undefined) {
  mcu.gpio[Number(markerPin)].addListener((state, old) => {
    if (state === 1 && old !== 1) markerEdges++; // GPIOPinState.High
  });
}
const t0 = process.hrtime.bigint();
let waitedNanos = 0;
process.stdin.on('end', () => {
  flushTx();
  stopped = true;
  sim.stop();
  if (markerPin !== undefined) process.stderr.write(`marker gpio${markerPin}: ${markerEdges} rising edges\n`);
  if (opts.stats) {
    const cpu = process.cpuUsage();
    const wall = Number(process.hrtime.bigint() - t0);
    process.stderr.write(`run.mjs: stats cycles=${mcu.core.cycles} waited_ns=${waitedNanos} cpu_us=${cpu.user + cpu.system} wall_ns=${wall} loop=${opts.loop} baud=${opts.baud}\n`);
  }
  process.exit(0);
});
let stopped = false;

// --spans: the cross-check of the firmware's counts against core.cycles. A timed region
// starts when the firmware writes SYST_CVR (plat_counter_align restarts SysTick's phase) and
// ends when it next writes NVIC_ISER (plat_timed_end unmasks the UART interrupt); its count
// is the difference of its last two SYST_CVR readings (t0 and t1 of core/bench.c). For each
// region the harness prints core.cycles between those two readings (the instructions from
// the one to the other, as the core's cycle table counts them) and how many times SysTick
// reloaded in between. SysTick runs on the clock the core advances by 8 ns a cycle, and a
// timed region never sleeps, but rp2040js reloads SysTick as it reaches 0, so its period is
// RELOAD cycles where the Cortex-M0+'s is RELOAD + 1; the firmware, which counts RELOAD + 1
// a wrap, reports cycles + wraps.
if (opts.spans) {
  const ppb = mcu.ppb;
  const read = ppb.readUint32.bind(ppb), write = ppb.writeUint32.bind(ppb);
  const reload = ppb.systickAlarm.callback;
  let reloads = 0;
  ppb.systickAlarm.callback = () => {
    reloads++;
    reload();
  };
  let region = null;
  ppb.readUint32 = (offset) => {
    if (offset === 0x018 && region !== null) region.push([mcu.core.cycles, reloads]);
    return read(offset);
  };
  ppb.writeUint32 = (offset, value) => {
    if (offset === 0x018) region = [];
    else if (offset === 0x100 && region !== null) {
      if (region.length >= 2) {
        const [c0, r0] = region[region.length - 2], [c1, r1] = region[region.length - 1];
        process.stderr.write(`run.mjs: span cycles=${c1 - c0} wraps=${r1 - r0}\n`);
      }
      region = null;
    }
    write(offset, value);
  };
}

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

// The stock loop is rp2040js's own Simulator.execute: a million steps, then a zero-delay
// timer. The batch loop steps the same core through the same clock (8 ns per cycle, alarms
// fired as Clock.tick fires them) in batches of BATCH cycles, feeds the RX FIFO between
// instructions only while the core sleeps (WFI) and at batch ends, and while the core sleeps
// with nothing to feed it stops until stdin brings more.
const CYCLE_NANOS = 8; // 1e9 / 125 MHz, as Simulator.execute
const BATCH = 1 << 22;
let idleTimer = null;
const resume = () => {
  wake = null;
  if (idleTimer !== null) {
    clearTimeout(idleTimer);
    idleTimer = null;
  }
  setImmediate(runBatch);
};
function runBatch() {
  if (stopped) return;
  const core = mcu.core, clock = sim.clock;
  const paced = BYTE_NANOS > 0;
  if (!paced) feedRx();
  const end = core.cycles + BATCH;
  while (core.cycles < end) {
    if (core.waiting) {
      if (!paced && rxWaiting()) {
        feedRx();
        if (!core.waiting) continue;
      }
      const n = clock.nanosToNextAlarm;
      clock.tick(n);
      waitedNanos += n;
      if (core.waiting && !(paced && rxPending)) {
        // Asleep with nothing to feed: sleep until input, or a millisecond for the
        // alarms' next turn.
        flushTx();
        wake = resume;
        idleTimer = setTimeout(resume, 1);
        return;
      }
      continue;
    }
    const c = core.executeInstruction();
    const to = clock.nanosCounter + c * CYCLE_NANOS;
    const next = clock.nextAlarm;
    if (next !== null && next.nanos <= to) clock.tick(c * CYCLE_NANOS);
    else clock.nanosCounter = to;
  }
  flushTx();
  setImmediate(runBatch);
}
if (opts.loop === 'stock') {
  sim.execute();
} else {
  // The batch loop also decodes through a table and reaches SRAM directly (decode.mjs): the
  // same branches and the same memory, found at once.
  const fast = predecode(mcu.core.constructor, (e) => process.stderr.write(`run.mjs: no decode table (${e.message}): the stock decoder\n`));
  if (fast) mcu.core.executeInstruction = fast;
  if (!sramFastPath(mcu.core, mcu)) process.stderr.write('run.mjs: a peripheral over SRAM: no SRAM fast path\n');
  runBatch();
}
