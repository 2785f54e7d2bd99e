//! The PAC's register blocks in RAM: zeroed TIM2, TIM3 and GPIO blocks on the
//! heap, a register's pointer by the PAC's names, plain stores and loads
//! without semantics, and ICxF's sampling table (RM0383 §13.4.7).

use std::boxed::Box;
use std::mem::MaybeUninit;

use stm32f4::stm32f411::tim2::ccmr1_input::ICFILTER;
use stm32f4::stm32f411::{tim2, tim3};

use crate::board::nucleo::TimReg;

/// A zeroed PAC register block on the heap.
///
/// # Safety
/// `T` must be valid when all zeros: the PAC's register blocks are
/// `repr(C)` structs of `VolatileCell<u32>` words and reserved byte
/// arrays, for which it is.
pub unsafe fn zeroed_block<T>() -> Box<T> {
    // SAFETY: the caller promises all-zero is a valid `T`.
    unsafe { Box::<MaybeUninit<T>>::new(MaybeUninit::zeroed()).assume_init() }
}

/// A zeroed TIM2 block.
pub fn tim2_block() -> Box<tim2::RegisterBlock> {
    // SAFETY: a PAC register block (`zeroed_block`'s condition).
    unsafe { zeroed_block() }
}

/// The pointer of `reg` in a TIM2 or TIM3 block, by the PAC's register
/// names (the two blocks share the layout; their PAC types differ).
macro_rules! tim_reg_ptr {
    ($b:expr, $reg:expr) => {
        match $reg {
            TimReg::Cr1 => $b.cr1().as_ptr(),
            TimReg::Cr2 => $b.cr2().as_ptr(),
            TimReg::Smcr => $b.smcr().as_ptr(),
            TimReg::Dier => $b.dier().as_ptr(),
            TimReg::Sr => $b.sr().as_ptr(),
            TimReg::Egr => $b.egr().as_ptr(),
            TimReg::Ccmr1 => $b.ccmr1_input().as_ptr(),
            TimReg::Ccmr2 => $b.ccmr2_input().as_ptr(),
            TimReg::Ccer => $b.ccer().as_ptr(),
            TimReg::Cnt => $b.cnt().as_ptr(),
            TimReg::Psc => $b.psc().as_ptr(),
            TimReg::Arr => $b.arr().as_ptr(),
            TimReg::Ccr1 => $b.ccr1().as_ptr(),
            TimReg::Ccr2 => $b.ccr2().as_ptr(),
            TimReg::Ccr3 => $b.ccr3().as_ptr(),
            TimReg::Ccr4 => $b.ccr4().as_ptr(),
        }
    };
}

/// The pointer of `reg` in a TIM2 block.
pub fn tim_ptr(b: &tim2::RegisterBlock, reg: TimReg) -> *mut u32 {
    tim_reg_ptr!(b, reg)
}

/// The pointer of `reg` in a TIM3 block.
pub fn tim3_ptr(b: &tim3::RegisterBlock, reg: TimReg) -> *mut u32 {
    tim_reg_ptr!(b, reg)
}

/// A zeroed TIM3 block.
pub fn tim3_block() -> Box<tim3::RegisterBlock> {
    // SAFETY: a PAC register block (`zeroed_block`'s condition).
    unsafe { zeroed_block() }
}

/// Store `v` in `reg` of a TIM2 block in RAM (no semantics).
pub fn tim_poke(b: &tim2::RegisterBlock, reg: TimReg, v: u32) {
    // SAFETY: the pointer is to a word of `b`, a block in RAM we hold a
    // reference to; its cells are `UnsafeCell`s, so writing through a
    // shared reference is allowed, and nothing else touches them now.
    unsafe { tim_ptr(b, reg).write_volatile(v) }
}

pub(super) fn tim_peek(b: &tim2::RegisterBlock, reg: TimReg) -> u32 {
    // SAFETY: a read of a word of `b` (see `tim_poke`).
    unsafe { tim_ptr(b, reg).read_volatile() }
}

/// Store `v` in `reg` of a TIM3 block in RAM (no semantics).
pub fn tim3_poke(b: &tim3::RegisterBlock, reg: TimReg, v: u32) {
    // SAFETY: as `tim_poke`, for a TIM3 block.
    unsafe { tim3_ptr(b, reg).write_volatile(v) }
}

pub(super) fn tim3_peek(b: &tim3::RegisterBlock, reg: TimReg) -> u32 {
    // SAFETY: a read of a word of `b` (see `tim_poke`).
    unsafe { tim3_ptr(b, reg).read_volatile() }
}

/// The pointer of `reg` in a GPIO block (ports A and B share the layout
/// of the registers used here; the PAC types differ).
macro_rules! gpio_ptr {
    ($b:expr, $reg:expr) => {
        match $reg {
            GpioReg::Moder => $b.moder().as_ptr(),
            GpioReg::Otyper => $b.otyper().as_ptr(),
            GpioReg::Ospeedr => $b.ospeedr().as_ptr(),
            GpioReg::Pupdr => $b.pupdr().as_ptr(),
            GpioReg::Idr => $b.idr().as_ptr(),
            GpioReg::Bsrr => $b.bsrr().as_ptr(),
            GpioReg::Afrl => $b.afrl().as_ptr(),
            GpioReg::Afrh => $b.afrh().as_ptr(),
        }
    };
}

/// Sampling period (ticks of f_CK_INT, CKD = 00) and N of an ICxF value,
/// RM0383 §13.4.7's table.
pub fn filter_of(f: ICFILTER) -> (u64, u64) {
    use ICFILTER::*;
    match f {
        NoFilter => (1, 1),
        FckIntN2 => (1, 2),
        FckIntN4 => (1, 4),
        FckIntN8 => (1, 8),
        FdtsDiv2N6 => (2, 6),
        FdtsDiv2N8 => (2, 8),
        FdtsDiv4N6 => (4, 6),
        FdtsDiv4N8 => (4, 8),
        FdtsDiv8N6 => (8, 6),
        FdtsDiv8N8 => (8, 8),
        FdtsDiv16N5 => (16, 5),
        FdtsDiv16N6 => (16, 6),
        FdtsDiv16N8 => (16, 8),
        FdtsDiv32N5 => (32, 5),
        FdtsDiv32N6 => (32, 6),
        FdtsDiv32N8 => (32, 8),
    }
}
