// A decode table for rp2040js's Cortex-M0+ core. Its executeInstruction tests each opcode
// against some eighty `if (...) {...} else if` conditions in turn, which is most of the
// emulator's time. predecode() rebuilds the same method from its own text, with the chain
// replaced by a switch on a 64 Ki-entry table that holds, for each 16-bit opcode, the index
// of the first branch whose condition it meets: each branch's body runs unchanged, and the
// cycle counts with it. The table is computed by evaluating the chain's own conditions for
// every opcode (for a 16-bit instruction the method sets opcode2 to 0, so they are exact);
// the 32-bit instructions (BL, MSR, MRS, DMB, DSB, ISB, UDF) keep the whole chain.
//
// It works on the text of the installed package (pinned by package-lock.json); if the
// method does not have the shape described, predecode returns null and the caller keeps the
// stock method.

// The module-level names the method's branches use, defined as rp2040js defines them.
const moduleScope = {
  pcRegister: 15,
  spRegister: 13,
  LOG_NAME: 'CortexM0Core',
  signExtend8: (value) => (value << 24) >> 24,
  signExtend16: (value) => (value << 16) >> 16,
};

// skipString returns the index after the string, template or comment starting at i, or i.
function skipString(src, i) {
  const c = src[i];
  if (c === '/' && src[i + 1] === '/') return src.indexOf('\n', i) + 1 || src.length;
  if (c === '/' && src[i + 1] === '*') return src.indexOf('*/', i + 2) + 2;
  if (c !== "'" && c !== '"' && c !== '`') return i;
  for (let j = i + 1; j < src.length; j++) {
    if (src[j] === '\\') j++;
    else if (c === '`' && src[j] === '$' && src[j + 1] === '{') j = matchClose(src, j + 1) - 1;
    else if (src[j] === c) return j + 1;
  }
  throw new Error('unterminated string');
}

// matchClose returns the index after the bracket that closes the one at open.
function matchClose(src, open) {
  const pairs = { '(': ')', '{': '}', '[': ']' };
  const stack = [];
  for (let i = open; i < src.length; ) {
    const j = skipString(src, i);
    if (j !== i) {
      i = j;
      continue;
    }
    const c = src[i];
    if (pairs[c]) stack.push(pairs[c]);
    else if (c === ')' || c === '}' || c === ']') {
      if (stack.pop() !== c) throw new Error(`unbalanced ${c} at ${i}`);
      if (stack.length === 0) return i + 1;
    }
    i++;
  }
  throw new Error('unbalanced brackets');
}

// skipSpace skips blanks and comments.
function skipSpace(src, i) {
  for (;;) {
    while (/\s/.test(src[i] ?? '')) i++;
    if (src[i] === '/' && (src[i + 1] === '/' || src[i + 1] === '*')) i = skipString(src, i);
    else return i;
  }
}

// parseChain splits `if (C0) {B0} else if (C1) {B1} ... else {Bn}` into its branches.
function parseChain(chain) {
  const branches = [];
  let i = skipSpace(chain, 0);
  let fallback = null;
  for (;;) {
    if (!chain.startsWith('if', i)) throw new Error(`expected if at ${i}`);
    const c0 = skipSpace(chain, i + 2);
    const c1 = matchClose(chain, c0);
    const b0 = skipSpace(chain, c1);
    if (chain[b0] !== '{') throw new Error(`expected { at ${b0}`);
    const b1 = matchClose(chain, b0);
    branches.push({ cond: chain.slice(c0, c1), body: chain.slice(b0, b1) });
    i = skipSpace(chain, b1);
    if (i >= chain.length) break;
    if (!chain.startsWith('else', i)) throw new Error(`expected else at ${i}`);
    i = skipSpace(chain, i + 4);
    if (chain[i] === '{') {
      const e1 = matchClose(chain, i);
      fallback = chain.slice(i, e1);
      if (skipSpace(chain, e1) !== chain.length) throw new Error('text after the last else');
      break;
    }
  }
  return { branches, fallback };
}

/**
 * predecode returns an executeInstruction for CoreClass (rp2040js's CortexM0Core) that
 * dispatches through a decode table, or null (with the reason in onError) when the method's
 * text is not the chain this expects.
 */
export function predecode(CoreClass, onError = () => {}) {
  try {
    const src = CoreClass.prototype.executeInstruction.toString();
    const head = 'let deltaCycles = 1;';
    const tail = 'this.cycles += deltaCycles;';
    const a = src.indexOf(head), z = src.lastIndexOf(tail);
    const open = src.indexOf('{');
    if (a < 0 || z < a || open < 0) throw new Error('no deltaCycles prologue or epilogue');
    const prologue = src.slice(open + 1, a + head.length);
    const chain = src.slice(a + head.length, z);
    const epilogue = src.slice(z, src.lastIndexOf('}'));
    if (!/const opcode = /.test(prologue) || !/const opcode2 = wideInstruction \?/.test(prologue)) {
      throw new Error('prologue does not read opcode and opcode2');
    }
    const { branches, fallback } = parseChain(chain);
    if (branches.length < 40) throw new Error(`only ${branches.length} branches`);
    const names = Object.keys(moduleScope);
    const values = names.map((n) => moduleScope[n]);

    // The table: the first branch whose condition holds for each 16-bit opcode (opcode2 0,
    // as the prologue sets it), branches.length for none, 255 for a 32-bit instruction.
    const conds = branches.map((b) => new Function(...names, 'opcode', 'opcode2', `return !!${b.cond};`).bind(null, ...values));
    const wide = new Function('opcode', /const wideInstruction = ([^;]+);/.exec(prologue)[1].replace(/^/, 'return '));
    if (branches.length >= 255) throw new Error('too many branches for the table');
    const table = new Uint8Array(65536);
    for (let op = 0; op < 65536; op++) {
      if (wide(op)) {
        table[op] = 255;
        continue;
      }
      let k = 0;
      while (k < branches.length && !conds[k](op, 0)) k++;
      table[op] = k;
    }
    const cases = branches.map((b, k) => `case ${k}: ${b.body} break;`).join('\n');
    const body = `${prologue}
switch (DECODE[opcode]) {
${cases}
case ${branches.length}: ${fallback ?? '{}'} break;
default: ${chain}
}
${epilogue}`;
    return new Function(...names, 'DECODE', `return function executeInstruction() {${body}};`)(...values, table);
  } catch (e) {
    onError(e);
    return null;
  }
}

/**
 * sramFastPath gives core (rp2040js's CortexM0Core) word and halfword accessors that reach
 * the SRAM array directly for aligned accesses inside it, and pass every other access to the
 * RP2040's own. rp2040js's writeUint32 looks an address up among the peripherals before it
 * tries SRAM; no peripheral is mapped over SRAM, which this checks (returning false, and
 * changing nothing, if one is).
 */
export function sramFastPath(core, mcu) {
  const RAM = 0x20000000;
  const size = mcu.sram.length;
  for (let a = RAM; a < RAM + size; a += 1 << 14) {
    if (mcu.findPeripheral(a)) return false;
  }
  const view = mcu.sramView;
  core.readUint32 = (address) => {
    const off = (address >>> 0) - RAM;
    if (off >= 0 && off + 3 < size && (off & 3) === 0) return view.getUint32(off, true);
    return mcu.readUint32(address);
  };
  core.writeUint32 = (address, value) => {
    const off = (address >>> 0) - RAM;
    if (off >= 0 && off + 3 < size && (off & 3) === 0) view.setUint32(off, value, true);
    else mcu.writeUint32(address, value);
  };
  core.readUint16 = (address) => {
    const off = address - RAM;
    if (off >= 0 && off + 1 < size) return view.getUint16(off, true);
    return mcu.readUint16(address);
  };
  return true;
}
