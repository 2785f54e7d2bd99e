//! The Nucleo's boot steps against the register models: the outputs
//! parked before anything waits (`gpio::park_outputs`), the host link's
//! IDLE flag watched without a CPU read of DR (`usart2::UsartWatch`), the
//! watchdog's setting and the reset cause (`iwdg`).

use std::vec::Vec;

use super::gpio::{configure_pins, park_outputs, PARKED};
use super::model::Model;
use super::{GpioBus, GpioReg, Port};

/// What a pin does, from its port's MODER, PUPDR and ODR (RM0383 §8.3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pin {
    /// An input, or an input alternate function (PB4 at reset is AF0,
    /// NJTRST: RM0383 §8.3.2), pulled up: the line sits high.
    PulledUp,
    /// An input with no pull: floats.
    Floating,
    /// A general-purpose output driving this level.
    Drives(bool),
    /// Alternate function with no pull, or analog: not the park's business.
    Other,
}

fn pin(m: &mut Model, port: Port, n: u8) -> Pin {
    let field = |v: u32| (v >> (2 * n)) & 0b11;
    let moder = field(m.gpio_read(port, GpioReg::Moder));
    let pupdr = field(m.gpio_read(port, GpioReg::Pupdr));
    let odr = match port {
        Port::A => m.gpioa().odr().read().bits(),
        Port::B => m.gpiob().odr().read().bits(),
    };
    match (moder, pupdr) {
        (0b00 | 0b10, 0b01) => Pin::PulledUp,
        (0b00, 0b00) => Pin::Floating,
        (0b01, _) => Pin::Drives(odr & (1 << n) != 0),
        _ => Pin::Other,
    }
}

#[test]
fn parked_outputs_go_straight_from_reset_to_their_idle_levels() {
    let mut m = Model::new(0);
    // The reset state the park starts from (RM0383 §8.4.1, §8.4.4).
    assert_eq!(pin(&mut m, Port::B, 4), Pin::PulledUp, "PB4 is NJTRST at reset");
    assert_eq!(pin(&mut m, Port::A, 0), Pin::Floating);
    assert_eq!(pin(&mut m, Port::A, 9), Pin::Floating);
    let (a_moder, b_moder) = (m.gpio_read(Port::A, GpioReg::Moder), m.gpio_read(Port::B, GpioReg::Moder));
    park_outputs(&mut m);
    // Replay the writes one by one on a fresh model: after each, a parked
    // pin that is an output drives its idle level, never the other one
    // (a glitch on the trigger or a start bit on the UART line).
    let writes: Vec<_> = m.gpio_writes.clone();
    let mut r = Model::new(0);
    for &(port, reg, value) in &writes {
        r.gpio_write(port, reg, value);
        for &(p, n, idle) in &PARKED {
            let now = pin(&mut r, p, n);
            assert!(
                !matches!(now, Pin::Drives(level) if level != idle),
                "P{p:?}{n} driven {now:?} after {reg:?} = {value:#x}, idles at {idle}"
            );
        }
    }
    for &(p, n, idle) in &PARKED {
        assert_eq!(pin(&mut m, p, n), Pin::Drives(idle), "P{p:?}{n}");
        let (otyper, pupdr) = (m.gpio_read(p, GpioReg::Otyper), m.gpio_read(p, GpioReg::Pupdr));
        assert_eq!(otyper & (1 << n), 0, "P{p:?}{n} push-pull");
        assert_eq!((pupdr >> (2 * n)) & 0b11, 0, "P{p:?}{n}: no pull, PB4's NJTRST pull-up off");
    }
    // SWD (PA13, PA14), PB3 and the HAL's pins untouched.
    let own_a: u32 = 0b11 | 0b11 << 16 | 0b11 << 18;
    assert_eq!(m.gpio_read(Port::A, GpioReg::Moder) & !own_a, a_moder & !own_a);
    assert_eq!(m.gpio_read(Port::B, GpioReg::Moder) & !(0b11 << 8), b_moder & !(0b11 << 8));
    // The pin set-up after it still ends as the bench needs (its own test
    // checks each field): PB4 in AF2 with no pull.
    configure_pins(&mut m);
    assert_eq!(pin(&mut m, Port::B, 4), Pin::Other);
    assert_eq!((m.gpio_read(Port::B, GpioReg::Pupdr) >> 8) & 0b11, 0);
}

// ----- USART2's IDLE and error flags (usart2::UsartWatch) -----

use super::model::usart2::Usart2;
use super::usart2::UsartWatch;
use crate::hostrx::{self, UsartEvents};

/// A host link started as the board starts it, after a 3-byte burst that
/// ended: IDLE up, USART2's interrupt pending.
fn after_a_burst() -> Usart2 {
    let mut chip = Usart2::new();
    assert!(hostrx::start(&mut chip, hostrx::USART2_RX_CHANNEL, 0x4000_4404, 0x2000_0000, 256));
    for b in [1, 2, 3] {
        chip.arrive(b);
    }
    chip.line_idle();
    assert!(chip.irq_pending());
    chip
}

/// For each CPU access of one interrupt pass, a byte (0xB0) that
/// completes just before it: what the CPU's reads took from DR instead of
/// the DMA, by the access it landed before.
fn stolen_wherever_a_byte_lands(mut pass: impl FnMut(&mut Usart2) -> UsartEvents) -> Vec<(usize, Vec<u8>)> {
    let mut out = Vec::new();
    for k in 0..12 {
        let mut chip = after_a_burst();
        chip.arrive_before = Some((chip.accesses + k, 0xB0));
        let ev = pass(&mut chip);
        assert!(ev.idle && ev.errors == 0, "{ev:?}");
        if let Some((_, b)) = chip.arrive_before.take() {
            chip.arrive(b); // after the pass
        }
        if !chip.stolen.is_empty() {
            assert_eq!(chip.ring, [1, 2, 3], "the stolen byte is missing from the ring");
        } else {
            assert_eq!(chip.ring, [1, 2, 3, 0xB0], "landing before access {k}");
        }
        out.push((k, chip.stolen.clone()));
    }
    out
}

#[test]
fn an_sr_then_dr_clear_takes_a_byte_that_lands_between_the_reads() {
    // The model shows the race the old clear had (hostrx::usart_events,
    // stm32f4xx-hal's clear_idle_interrupt): a byte completing between
    // its SR and DR reads goes to the CPU, not the ring, uncounted.
    let stolen = stolen_wherever_a_byte_lands(hostrx::usart_events);
    assert!(stolen.iter().any(|(_, s)| s == &[0xB0]), "{stolen:?}");
}

#[test]
fn the_watch_loses_no_byte_wherever_one_lands_and_rearms() {
    let mut watches = Vec::new();
    let stolen = stolen_wherever_a_byte_lands(|c| {
        let mut w = UsartWatch::new();
        let ev = w.poll(c);
        // Off while IDLE is up: no interrupt storm after the pass.
        assert!(!c.irq_pending(), "USART2's interrupt still pending after the pass");
        watches.push(w);
        ev
    });
    assert!(stolen.iter().all(|(_, s)| s.is_empty()), "{stolen:?}");
    // After the pass the watch comes back on as soon as the DMA's read of
    // a byte cleared IDLE, and the next burst's end raises the interrupt.
    let mut chip = after_a_burst();
    let mut w = UsartWatch::new();
    assert!(w.poll(&mut chip).idle && !w.armed());
    assert!(!w.poll(&mut chip).idle, "one IDLE is reported once");
    chip.arrive(0xB1); // the DMA's read completes SR-then-DR: IDLE clear
    assert!(!chip.idle());
    assert!(!w.poll(&mut chip).idle && w.armed(), "a SysTick pass turns it back on");
    chip.arrive(0xB2);
    chip.line_idle();
    assert!(chip.irq_pending(), "the next burst's end wakes the consumer");
    // A burst that starts and ends while the watch is off is still seen
    // by the next pass (the ring is drained on every pass anyway).
    assert!(w.poll(&mut chip).idle && !w.armed());
    chip.arrive(0xB3);
    chip.line_idle();
    assert!(!chip.irq_pending());
    let ev = w.poll(&mut chip);
    assert!(ev.idle && !w.armed(), "{ev:?}");
    assert_eq!(chip.ring, [1, 2, 3, 0xB1, 0xB2, 0xB3]);
    assert!(chip.stolen.is_empty());
}

#[test]
fn the_watch_counts_an_error_once_and_never_reads_dr() {
    let mut chip = after_a_burst();
    let mut w = UsartWatch::new();
    w.poll(&mut chip);
    chip.arrive(4);
    w.poll(&mut chip);
    assert!(w.armed());
    // That pass's SR read is completed by the next byte's DMA read. (The
    // model takes the harsher reading of RM0383 §19.6.1: that read clears
    // every flag, one that rose with that byte too, so an error on the
    // first byte after a pass may go uncounted here; the frame's CRC
    // still refuses the damaged frame.)
    chip.arrive(5);
    // FE rises with RXNE and the DMA reads DR at once, before any SR read:
    // FE stays up until the next byte's DMA read, with EIE's interrupt.
    chip.framing_error(6);
    assert!(chip.irq_pending());
    assert_eq!(w.poll(&mut chip), UsartEvents { idle: false, errors: 1 });
    assert!(!chip.irq_pending(), "EIE off while FE is up");
    assert_eq!(w.poll(&mut chip).errors, 0, "the same error is counted once");
    chip.arrive(7);
    assert_eq!(w.poll(&mut chip).errors, 0);
    assert!(w.armed());
    assert_eq!(chip.ring, [1, 2, 3, 4, 5, 6, 7]);
    assert!(chip.stolen.is_empty());
}

// ----- the watchdog (iwdg) -----

use super::iwdg::{self, key, IwdgRegs, Setting, WATCHDOG};

#[test]
fn watchdog_and_reset_flag_bits_are_the_pacs() {
    use stm32f4::stm32f411::{iwdg as pac_iwdg, rcc};
    // SAFETY: PAC register blocks (`zeroed_block`'s condition).
    let (r, w) = unsafe {
        (
            super::model::zeroed_block::<rcc::RegisterBlock>(),
            super::model::zeroed_block::<pac_iwdg::RegisterBlock>(),
        )
    };
    // SAFETY (each `bits`): a word of the model's RAM block.
    r.csr().write(|x| unsafe { x.bits(iwdg::CSR_IWDGRSTF) });
    assert!(r.csr().read().wdgrstf().bit_is_set() && !r.csr().read().rmvf().bit_is_set());
    r.csr().write(|x| unsafe { x.bits(iwdg::CSR_RMVF) });
    assert!(r.csr().read().rmvf().bit_is_set() && !r.csr().read().wdgrstf().bit_is_set());
    assert!(iwdg::reset_by_watchdog(iwdg::CSR_IWDGRSTF | 1 << 26) && !iwdg::reset_by_watchdog(1 << 26));
    // SAFETY (each raw store): SR is read-only to the PAC; this is the
    // model's RAM word, written to decode it.
    unsafe { w.sr().as_ptr().write_volatile(iwdg::SR_PVU as _) };
    assert!(w.sr().read().pvu().bit_is_set() && !w.sr().read().rvu().bit_is_set());
    unsafe { w.sr().as_ptr().write_volatile(iwdg::SR_RVU as _) };
    assert!(w.sr().read().rvu().bit_is_set() && !w.sr().read().pvu().bit_is_set());
    w.pr().write(|x| unsafe { x.bits(WATCHDOG.pr as _) });
    w.rlr().write(|x| unsafe { x.bits(WATCHDOG.rlr as _) });
    assert_eq!(
        (u32::from(w.pr().read().pr().bits()), u32::from(w.rlr().read().rl().bits())),
        (WATCHDOG.pr, WATCHDOG.rlr)
    );
    assert!(iwdg::BOOT_NOTE.len() <= latprobe_protocol::MAX_LOG_TEXT);
}

#[test]
fn the_watchdog_is_one_second_on_the_lsi() {
    assert_eq!(WATCHDOG, Setting { pr: 1, rlr: 3999 }, "LSI / 8, 4000 counts");
    assert_eq!(WATCHDOG.timeout_ms(), 1000);
    // stm32f4xx-hal 0.23 picks PR 6 and RLR 124 for 1000 ms: the same
    // second by the same formula, in coarser steps.
    assert_eq!(Setting { pr: 6, rlr: 124 }.timeout_ms(), 1000);
    for ms in [1, 100, 511, 512, 1000, 4000, 32_000] {
        let s = Setting::for_ms(ms);
        assert!(s.rlr <= 0xFFF && s.pr <= 6, "{ms}: {s:?}");
        assert_eq!(s.timeout_ms(), ms, "{ms}: {s:?}");
    }
}

#[derive(Default)]
struct IwdgLog {
    writes: Vec<(&'static str, u32)>,
    busy_reads: u32,
}

impl IwdgRegs for IwdgLog {
    fn kr(&mut self, key: u32) {
        self.writes.push(("KR", key));
    }
    fn pr(&mut self, pr: u32) {
        self.writes.push(("PR", pr));
    }
    fn rlr(&mut self, rlr: u32) {
        self.writes.push(("RLR", rlr));
    }
    fn sr(&mut self) -> u32 {
        self.writes.push(("SR?", 0));
        if self.busy_reads > 0 {
            self.busy_reads -= 1;
            iwdg::SR_PVU | iwdg::SR_RVU
        } else {
            0
        }
    }
}

#[test]
fn the_watchdog_starts_unlocks_sets_waits_and_reloads_in_that_order() {
    let mut r = IwdgLog { busy_reads: 2, ..IwdgLog::default() };
    assert!(iwdg::start(&mut r, WATCHDOG));
    assert_eq!(
        r.writes,
        [
            ("KR", key::START),
            ("KR", key::ACCESS),
            ("PR", 1),
            ("RLR", 3999),
            ("SR?", 0),
            ("SR?", 0),
            ("SR?", 0),
            ("KR", key::RELOAD)
        ]
    );
    // An update that never lands: reported, and the counter still reloaded.
    let mut r = IwdgLog { busy_reads: u32::MAX, ..IwdgLog::default() };
    assert!(!iwdg::start(&mut r, WATCHDOG));
    assert_eq!(r.writes.last(), Some(&("KR", key::RELOAD)));
}
