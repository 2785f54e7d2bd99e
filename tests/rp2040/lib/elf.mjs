// ELF32 little-endian ARM: the PT_LOAD segments, at their load (physical)
// addresses, as the flash image would hold them (.data's initial values sit
// in flash at their LMA; cortex-m-rt copies them to RAM).

const PT_LOAD = 1;

export function loadSegments(bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (view.getUint32(0, false) !== 0x7f454c46) throw new Error('not an ELF file');
  if (bytes[4] !== 1) throw new Error('not a 32-bit ELF');
  if (bytes[5] !== 1) throw new Error('not a little-endian ELF');
  const machine = view.getUint16(18, true);
  if (machine !== 40) throw new Error(`ELF machine ${machine} is not ARM (40)`);
  const phoff = view.getUint32(28, true);
  const phentsize = view.getUint16(42, true);
  const phnum = view.getUint16(44, true);
  const segments = [];
  for (let i = 0; i < phnum; i++) {
    const at = phoff + i * phentsize;
    const type = view.getUint32(at, true);
    const offset = view.getUint32(at + 4, true);
    const paddr = view.getUint32(at + 12, true);
    const filesz = view.getUint32(at + 16, true);
    if (type !== PT_LOAD || filesz === 0) continue;
    segments.push({ address: paddr, data: bytes.subarray(offset, offset + filesz) });
  }
  if (!segments.length) throw new Error('the ELF has no PT_LOAD segment with data');
  return segments;
}

const FLASH = 0x10000000;
const FLASH_SIZE = 16 * 1024 * 1024;
const SRAM = 0x20000000;

/** Copies the segments into rp2040js's flash and SRAM arrays. */
export function loadInto(rp2040, bytes) {
  const segments = loadSegments(bytes);
  for (const { address, data } of segments) {
    if (address >= FLASH && address + data.length <= FLASH + FLASH_SIZE) {
      rp2040.flash.set(data, address - FLASH);
    } else if (address >= SRAM && address + data.length <= SRAM + rp2040.sram.length) {
      rp2040.sram.set(data, address - SRAM);
    } else {
      throw new Error(`PT_LOAD segment at 0x${address.toString(16)} (${data.length} B) is neither in flash nor in SRAM`);
    }
  }
  return segments;
}
