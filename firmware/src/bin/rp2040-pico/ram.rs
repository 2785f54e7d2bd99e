//! The copy to SRAM that makes the image run from RAM (memory/rp2040-pico.x):
//! `__pre_init`, called by cortex-m-rt's `Reset` before `.data` and `.bss`
//! are set up, copies `.ram_text` (every `.text` and `.rodata` but the reset
//! path) and the vector table from flash to SRAM and points VTOR at the
//! copy. It lives in the `.Reset` input section, which link.x keeps in flash
//! with `Reset`, and is written in assembly because nothing compiled from
//! Rust may run before the copy: any Rust function is linked at its SRAM
//! address, which holds nothing yet.
//!
//! Why SRAM: on silicon an instruction fetched through the XIP cache that
//! misses costs a QSPI read (about 2-4 µs through a 03h loader, some 100s
//! of ns through W25Q080's quad read; RP2040 datasheet §2.6.3), and the PIO
//! stimulus target must reach its state machine 2 µs before its tick. The
//! rp2040js harness's `--forbid-xip-fetch` refuses a run that fetches from
//! flash once SRAM code has run, and `--xip-miss-ns` charges the misses.

// The copy loops move words: every bound is 4-aligned by the linker script
// (`ALIGN(4)` around .ram_text; the vector table is 48 words).
//
// VTOR is the Cortex-M0+'s SCB register at 0xE000ED08 (ARMv6-M ARM B3.2.5;
// RP2040 datasheet §2.4.8, M0PLUS_VTOR); the DSB/ISB pair makes the new
// table used by the next exception (ARMv6-M ARM A3.7.3). No exception can
// be taken before: interrupts are off out of reset and the boot ROM or the
// debugger leaves them so.
core::arch::global_asm!(
    ".section .Reset, \"ax\"",
    ".global __pre_init",
    ".type __pre_init,%function",
    ".thumb_func",
    "__pre_init:",
    // .ram_text: flash image to its SRAM home.
    "    ldr r0, =__sram_text",
    "    ldr r1, =__eram_text",
    "    ldr r2, =__siram_text",
    "0:  cmp r1, r0",
    "    beq 1f",
    "    ldm r2!, {{r3}}",
    "    stm r0!, {{r3}}",
    "    b 0b",
    "1:",
    // The vector table (its entries already hold SRAM addresses).
    "    ldr r0, =__sram_vectors",
    "    ldr r2, =__vector_table",
    "    ldr r1, =__vector_table_end",
    "2:  cmp r1, r2",
    "    beq 3f",
    "    ldm r2!, {{r3}}",
    "    stm r0!, {{r3}}",
    "    b 2b",
    "3:",
    "    ldr r0, =0xE000ED08",
    "    ldr r1, =__sram_vectors",
    "    str r1, [r0]",
    "    dsb",
    "    isb",
    "    bx lr",
    ".ltorg",
    ".size __pre_init, . - __pre_init",
);
