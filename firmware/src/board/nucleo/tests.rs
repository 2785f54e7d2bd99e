//! The Nucleo register layer against the PAC and the register model:
//! (a) every word the driver writes, decoded with the stm32f4 PAC's field
//! readers; (b) the capture loop run through `Tim2<Model>`; (c) the
//! hardware corner cases (overcapture, the wrap, a compare passed while it
//! is written); the input filter; the TX-wire check; the clock decoder.

use std::vec::Vec;

use latprobe_protocol::{
    decode_message, encode_message, Capabilities, Config, Edge, Feed, FrameDecoder, HostMsg, Mode, Outcome,
    ProbeMsg, Sample, Stimulus, Stopped,
};
use stm32f4::stm32f411::{gpioa, gpiob, rcc, tim2};

use super::gpio::configure_pins;
use super::model::{filter_of, tim2_block, tim_poke, tim_ptr, zeroed_block, Model, Target};
use super::rcc::{decode, ClockError, Clocks};
use super::tim2::{Tim2, SR_FLAGS};
use super::{Bus, GpioBus, GpioReg, Port, TimReg};
use crate::boards::nucleo_f411re::{LOOP, TIMER_HZ};
use crate::engine::{BoardInfo, Engine};
use crate::hwloop::seam::{Capture, Channel, OutputMode, Polarity, TimerHw};
use crate::hwloop::{Front, HwLoop, TimerLock};
use crate::ticks::TimerBits;

const US: u64 = 100;
const MS: u64 = 100_000;

/// A TIM2 block holding `word` in `reg`, for decoding with the PAC.
fn tim_with(reg: TimReg, word: u32) -> std::boxed::Box<tim2::RegisterBlock> {
    let b = tim2_block();
    tim_poke(&b, reg, word);
    b
}

/// A model with the pins set up and TIM2 started, at tick `t0`.
fn started(t0: u64) -> Tim2<Model> {
    let mut m = Model::new(t0);
    configure_pins(&mut m);
    m.advance(t0 + 1_000);
    Tim2::start(m)
}

// ----- (a) the words written, decoded by the PAC -----

#[test]
fn register_offsets_are_the_pacs() {
    let b = tim2_block();
    let base = &*b as *const tim2::RegisterBlock as usize;
    for r in [
        TimReg::Cr1,
        TimReg::Dier,
        TimReg::Sr,
        TimReg::Egr,
        TimReg::Ccmr1,
        TimReg::Ccmr2,
        TimReg::Ccer,
        TimReg::Cnt,
        TimReg::Psc,
        TimReg::Arr,
        TimReg::Ccr1,
        TimReg::Ccr2,
        TimReg::Ccr3,
        TimReg::Ccr4,
    ] {
        assert_eq!(tim_ptr(&b, r) as usize - base, r.offset(), "{r:?}");
    }
    // SAFETY: PAC register blocks.
    let (a, bb) = unsafe { (zeroed_block::<gpioa::RegisterBlock>(), zeroed_block::<gpiob::RegisterBlock>()) };
    let (ba, bb_) = (&*a as *const _ as usize, &*bb as *const _ as usize);
    let pairs: [(GpioReg, usize, usize); 8] = [
        (GpioReg::Moder, a.moder().as_ptr() as usize - ba, bb.moder().as_ptr() as usize - bb_),
        (GpioReg::Otyper, a.otyper().as_ptr() as usize - ba, bb.otyper().as_ptr() as usize - bb_),
        (GpioReg::Ospeedr, a.ospeedr().as_ptr() as usize - ba, bb.ospeedr().as_ptr() as usize - bb_),
        (GpioReg::Pupdr, a.pupdr().as_ptr() as usize - ba, bb.pupdr().as_ptr() as usize - bb_),
        (GpioReg::Idr, a.idr().as_ptr() as usize - ba, bb.idr().as_ptr() as usize - bb_),
        (GpioReg::Bsrr, a.bsrr().as_ptr() as usize - ba, bb.bsrr().as_ptr() as usize - bb_),
        (GpioReg::Afrl, a.afrl().as_ptr() as usize - ba, bb.afrl().as_ptr() as usize - bb_),
        (GpioReg::Afrh, a.afrh().as_ptr() as usize - ba, bb.afrh().as_ptr() as usize - bb_),
    ];
    for (r, oa, ob) in pairs {
        assert_eq!((oa, ob), (r.offset(), r.offset()), "{r:?}");
    }
}

/// The SR clear words: the flag set is the PAC's rc_w0 field map.
#[test]
fn sr_flags_are_the_pacs_rc_w0_fields() {
    assert_eq!(SR_FLAGS, <tim2::sr::SRrs as stm32f4::Writable>::ZERO_TO_MODIFY_FIELDS_BITMAP);
}

#[test]
fn start_writes_what_rm0383_says() {
    let t = started(0);
    let m = t.bus();
    let w = |r| m.last_write(r).unwrap_or_else(|| panic!("{r:?} not written"));
    let cr1 = tim_with(TimReg::Cr1, w(TimReg::Cr1));
    let cr1 = cr1.cr1().read();
    assert!(cr1.cen().is_enabled());
    assert!(cr1.dir().is_up() && cr1.cms().is_edge_aligned() && cr1.opm().is_disabled());
    assert!(
        cr1.arpe().is_disabled()
            && cr1.ckd().is_div1()
            && cr1.udis().is_enabled()
            && cr1.urs().is_any_event()
    );
    assert_eq!(w(TimReg::Psc), 0);
    assert_eq!(w(TimReg::Arr), u32::MAX);
    // CCMR1: one word, two views.
    let b = tim_with(TimReg::Ccmr1, w(TimReg::Ccmr1));
    let out = b.ccmr1_output().read();
    assert!(out.cc1s().is_output() && out.oc1m().is_frozen() && out.oc1pe().is_disabled());
    assert!(out.oc1fe().is_disabled() && out.oc1ce().is_disabled());
    let inp = b.ccmr1_input().read();
    assert!(inp.cc2s().is_ti2(), "CC2S = 01: IC2 on TI2 (PA1)");
    assert!(inp.ic2f().is_fck_int_n8());
    assert!(inp.ic2psc().is_no_prescaler());
    let b = tim_with(TimReg::Ccmr2, w(TimReg::Ccmr2));
    let inp = b.ccmr2_input().read();
    assert!(inp.cc3s().is_ti3() && inp.ic3f().is_fck_int_n8() && inp.ic3psc().is_no_prescaler());
    let out = b.ccmr2_output().read();
    assert!(out.cc4s().is_output() && out.oc4m().is_frozen());
    let b = tim_with(TimReg::Ccer, w(TimReg::Ccer));
    let ccer = b.ccer().read();
    assert!(ccer.cc1e().bit_is_set() && ccer.cc1p().bit_is_clear() && ccer.cc1np().bit_is_clear());
    assert!(ccer.cc2e().bit_is_clear() && ccer.cc3e().bit_is_clear() && ccer.cc4e().bit_is_clear());
    let b = tim_with(TimReg::Dier, w(TimReg::Dier));
    let dier = b.dier().read();
    assert!(dier.uie().is_enabled() && dier.cc1ie().is_disabled() && dier.cc2ie().is_disabled());
    // UIF, set by UG, is cleared and only it.
    let egr_at = m.writes.iter().position(|w| w.0 == TimReg::Egr).unwrap();
    let (_, sr) = m.writes[egr_at + 1];
    let b = tim_with(TimReg::Sr, sr);
    let sr = b.sr().read();
    assert!(
        sr.uif().bit_is_clear()
            && sr.cc1if().bit_is_set()
            && sr.cc2of().bit_is_set()
            && sr.tif().bit_is_set()
    );
    // The model's view: running, UIF clear.
    assert!(!m.tim_irq());
}

#[test]
fn capture_polarities_are_ccer_p_np() {
    for (ch, p) in [(Channel::Response, 2), (Channel::TxStart, 3)] {
        for pol in [Some(Polarity::Rising), Some(Polarity::Falling), Some(Polarity::Both), None] {
            let mut t = started(0);
            t.set_capture(ch, pol);
            let m = t.bus();
            let b = tim_with(TimReg::Ccer, m.last_write(TimReg::Ccer).unwrap());
            let c = b.ccer().read();
            let (e, cp, np) =
                (c.cce(p - 1).bit_is_set(), c.ccp(p - 1).bit_is_set(), c.ccnp(p - 1).bit_is_set());
            // RM0383 §13.4.9: 00 rising, 10 falling, 11 both.
            let want = match pol {
                Some(Polarity::Rising) => (true, false, false),
                Some(Polarity::Falling) => (true, true, false),
                Some(Polarity::Both) => (true, true, true),
                None => (false, false, false),
            };
            assert_eq!((e, cp, np), want, "{ch:?} {pol:?}");
            assert!(c.cc1e().bit_is_set(), "CH1's output stays on");
            let b = tim_with(TimReg::Dier, m.last_write(TimReg::Dier).unwrap());
            assert_eq!(b.dier().read().ccie(p - 1).bit_is_set(), pol.is_some());
            assert!(b.dier().read().uie().is_enabled());
        }
    }
}

#[test]
fn output_modes_are_oc1m_and_keep_ch2s_capture() {
    for mode in [
        OutputMode::Frozen,
        OutputMode::ForceHigh,
        OutputMode::ForceLow,
        OutputMode::HighOnMatch,
        OutputMode::LowOnMatch,
        OutputMode::ToggleOnMatch,
    ] {
        let mut t = started(0);
        t.set_output(mode);
        let b = tim_with(TimReg::Ccmr1, t.bus().last_write(TimReg::Ccmr1).unwrap());
        let o = b.ccmr1_output().read().oc1m();
        let ok = match mode {
            OutputMode::Frozen => o.is_frozen(),
            OutputMode::ForceHigh => o.is_force_active(),
            OutputMode::ForceLow => o.is_force_inactive(),
            OutputMode::HighOnMatch => o.is_active_on_match(),
            OutputMode::LowOnMatch => o.is_inactive_on_match(),
            OutputMode::ToggleOnMatch => o.is_toggle(),
        };
        assert!(ok, "{mode:?}");
        let i = b.ccmr1_input().read();
        assert!(i.cc2s().is_ti2() && i.ic2f().is_fck_int_n8(), "{mode:?}");
        // Forced levels reach PA0 and its IDR bit.
        match mode {
            OutputMode::ForceHigh => assert!(t.output_level()),
            OutputMode::ForceLow | OutputMode::Frozen => assert!(!t.output_level()),
            _ => {}
        }
    }
}

#[test]
fn pins_are_what_the_bench_needs() {
    let mut m = Model::new(0);
    // What the HAL left: USART2 on PA2/PA3 (AF7), LD2 on PA5 as output.
    m.gpio_write(Port::A, GpioReg::Afrl, 0x7700);
    let moder = m.gpio_read(Port::A, GpioReg::Moder);
    m.gpio_write(Port::A, GpioReg::Moder, moder | 0b10 << 4 | 0b10 << 6 | 0b01 << 10);
    let (a_before, b_before) = (m.gpio_read(Port::A, GpioReg::Moder), m.gpio_read(Port::B, GpioReg::Moder));
    configure_pins(&mut m);
    let a = m.gpioa();
    let (moder, afrl, afrh, osp, pupd, ot) = (
        a.moder().read(),
        a.afrl().read(),
        a.afrh().read(),
        a.ospeedr().read(),
        a.pupdr().read(),
        a.otyper().read(),
    );
    assert!(moder.moder0().is_alternate() && afrl.afrl0().is_af1(), "PA0 TIM2_CH1");
    assert!(osp.ospeedr0().is_very_high_speed() && ot.ot0().is_push_pull() && pupd.pupdr0().is_floating());
    assert!(
        moder.moder1().is_alternate() && afrl.afrl1().is_af1() && pupd.pupdr1().is_pull_up(),
        "PA1 TIM2_CH2"
    );
    assert!(
        moder.moder8().is_output() && osp.ospeedr8().is_very_high_speed() && ot.ot8().is_push_pull(),
        "PA8"
    );
    assert!(a.odr().read().odr8().bit_is_clear(), "PA8 starts low");
    assert!(moder.moder9().is_alternate() && afrh.afrh9().is_af7(), "PA9 USART1_TX");
    assert!(osp.ospeedr9().is_very_high_speed() && ot.ot9().is_push_pull() && pupd.pupdr9().is_floating());
    assert!(moder.moder10().is_alternate() && afrh.afrh10().is_af7() && pupd.pupdr10().is_pull_up(), "PA10");
    // The HAL's pins and SWD (PA13/PA14) untouched.
    let keep_a: u32 = !(0b11 | 0b11 << 2 | 0b11 << 16 | 0b11 << 18 | 0b11 << 20);
    assert_eq!(moder.bits() & keep_a, a_before & keep_a);
    assert!(moder.moder13().is_alternate() && moder.moder14().is_alternate() && pupd.pupdr13().is_pull_up());
    assert!(afrl.afrl2().is_af7() && afrl.afrl3().is_af7());
    let b = m.gpiob();
    let (moder, afrl, afrh, pupd) = (b.moder().read(), b.afrl().read(), b.afrh().read(), b.pupdr().read());
    assert!(moder.moder10().is_alternate() && afrh.afrh10().is_af1() && pupd.pupdr10().is_pull_up(), "PB10");
    let (osp, ot) = (b.ospeedr().read(), b.otyper().read());
    assert!(moder.moder4().is_alternate() && afrl.afrl4().is_af2(), "PB4 TIM3_CH1 (AF2, DS10314 table 9)");
    assert!(
        osp.ospeedr4().is_very_high_speed() && ot.ot4().is_push_pull() && pupd.pupdr4().is_floating(),
        "PB4 driven push-pull, its reset pull-up (NJTRST) off"
    );
    let keep_b: u32 = !(0b11 << 20 | 0b11 << 8);
    assert_eq!(moder.bits() & keep_b, b_before & keep_b, "PB3 (reset: JTDO/SWO) untouched");
}

// ----- the model's own semantics -----

#[test]
fn model_sr_is_rc_w0_and_ccr_reads_clear_ccxif() {
    let mut t = started(0);
    t.set_capture(Channel::Response, Some(Polarity::Rising));
    let m = t.bus_mut();
    let at = m.t + 100;
    m.pa1_edge_at(at, true);
    m.pa1_edge_at(at + 50, false);
    m.pa1_edge_at(at + 100, true);
    m.advance(at + 20);
    assert_eq!(m.tim_read(TimReg::Sr) & 0b100, 0b100, "CC2IF");
    // Writing 1 leaves it, writing 0 clears the others.
    m.tim_write(TimReg::Sr, SR_FLAGS & !1);
    assert_eq!(m.tim_read(TimReg::Sr) & 0b100, 0b100, "written 1: left");
    m.advance(at + 150);
    let sr = m.tim_read(TimReg::Sr);
    assert_eq!(sr & (1 << 10 | 1 << 2), 1 << 10 | 1 << 2, "second capture before the read: CC2OF");
    let raw = m.tim_read(TimReg::Ccr2);
    assert_eq!(u64::from(raw), u64::from(m.cnt()) - (m.t - (at + 100 + 8)), "the latest edge, 8 ticks late");
    assert_eq!(m.tim_read(TimReg::Sr) & 0b100, 0, "CCR2 read cleared CC2IF");
    assert_ne!(m.tim_read(TimReg::Sr) & 1 << 10, 0, "CC2OF stays until cleared");
}

#[test]
fn model_compare_flags_on_every_match_and_uif_at_the_wrap() {
    let mut t = started(0);
    let m = t.bus_mut();
    m.tim_write(TimReg::Cnt, u32::MAX - 1_000);
    m.tim_write(TimReg::Ccr4, u32::MAX - 500);
    m.tim_write(TimReg::Sr, 0);
    m.advance(m.t + 600);
    assert_eq!(m.tim_read(TimReg::Sr) & (1 << 4 | 1), 1 << 4, "CC4IF, no wrap yet");
    m.tim_write(TimReg::Sr, 0);
    m.advance(m.t + 600);
    assert_eq!(m.tim_read(TimReg::Sr) & (1 << 4 | 1), 1, "UIF at the wrap");
    m.tim_write(TimReg::Sr, 0);
    m.tim_write(TimReg::Cnt, u32::MAX - 1_000);
    m.advance(m.t + 600);
    assert_ne!(m.tim_read(TimReg::Sr) & 1 << 4, 0, "CC4IF again at the next match");
}

// ----- (c) the driver's corner cases -----

#[test]
fn a_second_capture_before_the_read_is_an_overcapture_of_the_latest() {
    let mut t = started(0);
    t.set_capture(Channel::Response, Some(Polarity::Both));
    let e0 = t.bus().t + 100;
    t.bus_mut().pa1_edge_at(e0, true);
    t.bus_mut().pa1_edge_at(e0 + 40, false);
    let now = e0 + 200;
    t.bus_mut().advance(now);
    let cnt_now = t.bus().cnt();
    let c = t.take_capture(Channel::Response).expect("latched");
    let latest = u64::from(cnt_now) - (now - (e0 + 40 + 8));
    assert_eq!(c, Capture { raw: latest as u32, overcaptured: true });
    assert_eq!(t.take_capture(Channel::Response), None);
    // CC2OF was cleared: the next single edge is clean.
    let t1 = t.bus().t;
    t.bus_mut().pa1_edge_at(t1 + 10, true);
    t.bus_mut().advance(t1 + 100);
    assert!(!t.take_capture(Channel::Response).unwrap().overcaptured);
}

#[test]
fn a_pulse_shorter_than_the_filter_is_never_captured() {
    let mut t = started(0);
    t.set_capture(Channel::Response, Some(Polarity::Both));
    let e0 = t.bus().t + 100;
    let m = t.bus_mut();
    m.pa1_edge_at(e0, true);
    m.pa1_edge_at(e0 + 7, false);
    t.bus_mut().advance(e0 + 100);
    assert_eq!(t.take_capture(Channel::Response), None);
}

#[test]
fn a_compare_written_behind_the_counter_matches_only_after_the_wrap() {
    let mut t = started(0);
    let cnt = t.counter();
    t.set_compare(Channel::Stimulus, cnt.wrapping_add(1));
    t.take_compare(Channel::Stimulus);
    let t1 = t.bus().t;
    t.bus_mut().advance(t1 + 10_000);
    assert!(!t.compare_pending(Channel::Stimulus), "passed while it was written: no match this period");
}

// ----- the TX wire check -----

#[test]
fn the_tx_wire_check_tells_wired_from_absent_and_leaves_no_capture() {
    for wired in [true, false] {
        let mut m = Model::new(0);
        if wired {
            m.wire_tx();
        }
        configure_pins(&mut m);
        m.advance(10_000);
        let mut t = Tim2::start(m);
        t.set_capture(Channel::TxStart, Some(Polarity::Falling));
        assert_eq!(t.tx_wire_present(), Some(wired));
        assert_eq!(t.take_capture(Channel::TxStart), None, "wired {wired}: the pull's swing is no start bit");
        assert!(t.bus().gpiob().pupdr().read().pupdr10().is_pull_up(), "pull-up restored");
        if !wired {
            assert!(t.bus().latched.iter().any(|l| l.channel == 3), "the swing did latch (and was cleared)");
        }
    }
}

// ----- (b) the capture loop through Tim2<Model> -----

struct Locked<'a> {
    front: &'a mut Front,
    hw: &'a mut Tim2<Model>,
}

impl TimerLock for Locked<'_> {
    type Hw = Tim2<Model>;
    fn lock<R>(&mut self, f: impl FnOnce(&mut Front, &mut Tim2<Model>) -> R) -> R {
        f(self.front, self.hw)
    }
}

struct Sim {
    hw: Tim2<Model>,
    front: Front,
    lp: HwLoop,
    e: Engine<4096>,
    irq_latency: u64,
    task_at: Option<u64>,
    rx: FrameDecoder,
    samples: Vec<Sample>,
    stopped: Option<Stopped>,
}

impl Sim {
    fn new(hw: Tim2<Model>) -> Self {
        Self::with_board(hw, board())
    }

    fn with_board(hw: Tim2<Model>, board: BoardInfo) -> Self {
        let t = hw.bus().t;
        Self {
            hw,
            front: Front::new(LOOP.timer_bits),
            lp: HwLoop::new(LOOP),
            e: Engine::new(board),
            irq_latency: 40,
            task_at: Some(t),
            rx: FrameDecoder::new(),
            samples: Vec::new(),
            stopped: None,
        }
    }

    fn m(&mut self) -> &mut Model {
        self.hw.bus_mut()
    }

    fn host_says(&mut self, msg: &HostMsg) {
        let mut buf = [0u8; 256];
        let n = encode_message(msg, &mut buf).unwrap();
        let now = self.front.now(&mut self.hw);
        self.e.on_host_bytes(&buf[..n], now);
        self.task_at.get_or_insert(self.hw.bus().t);
    }

    fn drain(&mut self) {
        let mut buf = [0u8; 512];
        loop {
            let n = self.e.read_tx(&mut buf);
            if n == 0 {
                break;
            }
            let mut input = &buf[..n];
            while let Feed::Frame { frame, rest } = self.rx.feed(input) {
                match decode_message::<ProbeMsg>(frame).unwrap() {
                    ProbeMsg::SampleBatch(b) => self.samples.extend(b.iter().map(|s| s.unwrap())),
                    ProbeMsg::Stopped(s) => self.stopped = Some(s),
                    _ => {}
                }
                input = rest;
            }
        }
    }

    fn run_until(&mut self, end: u64) {
        while self.hw.bus().t < end {
            let m = self.hw.bus();
            if m.tim_irq() || m.tim3_irq() || m.rx_ready() {
                let entry = m.t + self.irq_latency;
                self.m().advance(entry);
                while let Some(b) = self.m().rx_take() {
                    self.front.on_target_byte(&mut self.hw, b);
                }
                if self.hw.bus().tim_irq() || self.hw.bus().tim3_irq() {
                    self.front.on_timer_interrupt(&mut self.hw);
                }
                self.task_at.get_or_insert(self.hw.bus().t);
                continue;
            }
            if self.task_at.is_some_and(|at| self.hw.bus().t >= at) {
                self.task_at = None;
                let mut l = Locked { front: &mut self.front, hw: &mut self.hw };
                self.lp.run(&mut self.e, &mut l);
                self.drain();
                if self.stopped.is_some() {
                    return;
                }
                continue;
            }
            let m = self.hw.bus();
            let mut next = m.next_event().min(end);
            if let Some(at) = self.task_at {
                next = next.min(at);
            }
            let to = next.max(m.t + 1);
            self.m().advance(to);
        }
    }

    fn measure(&mut self, config: Config, limit: u64) -> Stopped {
        self.host_says(&HostMsg::Configure(config));
        self.host_says(&HostMsg::Start);
        let end = self.hw.bus().t + limit;
        self.run_until(end);
        self.stopped.unwrap_or_else(|| panic!("no Stopped by {end}: {} samples", self.samples.len()))
    }

    fn latencies(&self) -> Vec<Option<u32>> {
        self.samples
            .iter()
            .map(|s| match s.outcome {
                Outcome::Response(l) => Some(l),
                Outcome::Timeout => None,
            })
            .collect()
    }
}

/// The Nucleo's board description, as its binary builds it.
fn board() -> BoardInfo {
    let caps =
        Capabilities::GPIO_ECHO | Capabilities::UART_ECHO | Capabilities::LOOPBACK | Capabilities::HW_CAPTURE;
    BoardInfo::new("model-nucleo", TIMER_HZ, TimerBits::B32, caps)
        .with_uart_echo_floor(LOOP.baud)
        .with_response_lag((2 * LOOP.byte_ticks()) as u32)
}

/// The true tick at which TIM2's counter read 0 (its extended ticks' origin).
fn origin(m: &Model) -> u64 {
    m.t - u64::from(m.cnt())
}

fn echo(mode: Mode, stimulus: Stimulus, count: u64) -> Config {
    Config {
        mode,
        interval_ticks: MS as u32,
        dither_ticks: 0,
        timeout_ticks: (500 * US) as u32,
        guard_ticks: 0,
        count: Some(count),
        seed: 1,
        stimulus,
        trigger_ticks: 0,
    }
}

#[test]
fn gpio_echo_through_the_registers_is_exact() {
    for edge in [Edge::Rising, Edge::Falling, Edge::Toggle] {
        let hw = started(1_000);
        let origin = origin(hw.bus());
        let mut s = Sim::new(hw);
        if edge == Edge::Falling {
            s.m().uart_response_line();
        }
        s.m().target = Target::GpioEcho { edge, latency: 12_345, pulse: Some(20 * US) };
        if edge == Edge::Toggle {
            s.m().target = Target::GpioEcho { edge, latency: 12_345, pulse: None };
        }
        let st = s.measure(echo(Mode::GpioEcho, Stimulus::Edge(edge), 10), 100 * MS);
        assert_eq!((st.taken, st.timeouts), (10, 0), "{edge:?} {st:?}");
        assert!(s.latencies().iter().all(|&l| l == Some(12_345)), "{edge:?} {:?}", s.latencies());
        // The reported stimulus ticks are when PA0 moved (the edges of the
        // stimulus's direction; the returns to idle are not stimuli).
        let m = s.hw.bus();
        let moved: Vec<u64> = m
            .pa0_edges
            .iter()
            .filter(|&&(_, high)| match edge {
                Edge::Rising => high,
                Edge::Falling => !high,
                Edge::Toggle => true,
            })
            .map(|&(t, _)| t - origin)
            .collect();
        let ticks: Vec<u64> = s.samples.iter().map(|x| x.stimulus_tick).collect();
        assert_eq!(moved, ticks, "{edge:?}");
        // The marker went high at each stimulus and low at each answer.
        assert!(m.marker_edges.len() >= 2 * 10 - 1, "{edge:?} marker {:?}", m.marker_edges.len());
    }
}

/// The filter's delay, derived from the register the driver wrote (ICxF
/// as the PAC decodes it, RM0383's table), not from the constant: an edge
/// at a known tick latches that much later in the model, and the sample's
/// latency is the target's exactly. With `CAPTURE_FILTER_TICKS` 7 or 9, or
/// added instead of subtracted in the loop, it is off by 1, 1 or 16.
#[test]
fn an_edge_at_a_known_tick_gives_exactly_its_latency() {
    let hw = started(1_000);
    let b = tim_with(TimReg::Ccmr1, hw.bus().last_write(TimReg::Ccmr1).unwrap());
    let (period, n) = filter_of(b.ccmr1_input().read().ic2f().variant());
    assert_eq!(hw.bus().filter_ticks(0), period * n);
    let mut s = Sim::new(hw);
    let latency = 7_777;
    s.m().target = Target::GpioEcho { edge: Edge::Rising, latency, pulse: Some(10 * US) };
    let st = s.measure(echo(Mode::GpioEcho, Stimulus::Edge(Edge::Rising), 5), 100 * MS);
    assert_eq!((st.taken, st.timeouts), (5, 0), "{st:?}");
    let m = s.hw.bus();
    let ch2: Vec<_> = m.latched.iter().filter(|l| l.channel == 2).collect();
    assert!(!ch2.is_empty());
    for l in &ch2 {
        assert_eq!(l.latch_at - l.edge_at, period * n, "the model latches N samples after the edge");
    }
    assert!(s.latencies().iter().all(|&l| l == Some(latency as u32)), "{:?}", s.latencies());
}

#[test]
fn uart_echo_through_the_registers_with_and_without_the_tx_wire() {
    for wired in [true, false] {
        let mut m = Model::new(0);
        if wired {
            m.wire_tx();
        }
        configure_pins(&mut m);
        m.advance(10_000);
        let mut hw = Tim2::start(m);
        assert_eq!(hw.tx_wire_present(), Some(wired));
        let mut s = Sim::new(hw);
        s.m().uart_response_line();
        s.m().target = Target::UartEcho { latency: 100 * US };
        let st = s.measure(echo(Mode::UartEcho, Stimulus::Identified, 12), 100 * MS);
        assert_eq!((st.taken, st.timeouts), (12, 0), "wired {wired}: {st:?}");
        for l in s.latencies() {
            let l = u64::from(l.unwrap());
            if wired {
                assert_eq!(l, 100 * US, "start bit to start bit, both captured");
            } else {
                // A software tick: a few accesses and the transmitter's start early.
                assert!((100 * US..100 * US + 60).contains(&l), "{l}");
            }
        }
        assert_eq!(s.e.totals().anomalies.soft_stimuli, if wired { 0 } else { 12 });
    }
}

#[test]
fn gpio_echo_across_the_wrap_is_exact() {
    let mut hw = started(1_000);
    hw.bus_mut().tim_write(TimReg::Cnt, u32::MAX - 6 * MS as u32);
    let mut s = Sim::new(hw);
    s.irq_latency = 30 * US;
    s.m().target = Target::GpioEcho { edge: Edge::Toggle, latency: 333, pulse: None };
    let st = s.measure(echo(Mode::GpioEcho, Stimulus::Edge(Edge::Toggle), 12), 100 * MS);
    assert_eq!((st.taken, st.timeouts), (12, 0), "{st:?}");
    assert!(s.latencies().iter().all(|&l| l == Some(333)), "{:?}", s.latencies());
    let ticks: Vec<u64> = s.samples.iter().map(|x| x.stimulus_tick).collect();
    let wrap = 1u64 << 32;
    assert!(ticks[0] < wrap && *ticks.last().unwrap() > wrap, "{ticks:?}");
}

#[test]
fn an_overcaptured_gpio_answer_is_counted_not_timed() {
    let mut s = Sim::new(started(1_000));
    s.m().target = Target::GpioEcho { edge: Edge::Toggle, latency: 50 * US, pulse: Some(3 * US) };
    s.irq_latency = 5 * US;
    let st = s.measure(echo(Mode::GpioEcho, Stimulus::Edge(Edge::Toggle), 5), 100 * MS);
    assert_eq!(st.taken, 5);
    assert_eq!(st.anomalies.overcaptures, 5, "{:?}", st.anomalies);
    assert!(s.latencies().iter().all(Option::is_none));
}

/// Slow accesses and short arm leads: `at` passes while CCR1 is written.
/// Every reported stimulus tick is within two accesses of when PA0 moved.
#[test]
fn a_compare_passed_while_being_written_becomes_a_timed_soft_edge() {
    for lead in 1u32..=60 {
        let mut hw = started(1_000);
        hw.bus_mut().access_ticks = 3;
        hw.bus_mut().wires.gpio_loopback = true;
        let origin = origin(hw.bus());
        let mut s = Sim::with_board(hw, board().with_arm_lead(lead));
        let st = s.measure(echo(Mode::Loopback, Stimulus::Edge(Edge::Toggle), 8), 100 * MS);
        assert_eq!((st.taken, st.timeouts), (8, 0), "lead {lead}: {st:?}");
        let m = s.hw.bus();
        assert_eq!(m.pa0_edges.len(), 8);
        for (smp, &(moved, _)) in s.samples.iter().zip(&m.pa0_edges) {
            let d = (moved - origin) as i64 - smp.stimulus_tick as i64;
            assert!(
                (0..=6).contains(&d),
                "lead {lead}: reported {} moved {}",
                smp.stimulus_tick,
                moved - origin
            );
        }
    }
}

// ----- RCC -----

fn rcc_words(f: impl FnOnce(&rcc::RegisterBlock)) -> (u32, u32, u32) {
    // SAFETY: a PAC register block.
    let b = unsafe { zeroed_block::<rcc::RegisterBlock>() };
    f(&b);
    (b.cfgr().read().bits(), b.pllcfgr().read().bits(), b.dckcfgr().read().bits())
}

/// SWS is read-only in the PAC's writer: its bits (3:2) are set by hand,
/// from SW's, as the hardware does once the switch is done.
fn sws_follows_sw(cfgr: u32) -> u32 {
    cfgr | (cfgr & 0b11) << 2
}

#[test]
fn the_clock_tree_decodes_to_100_mhz_for_the_nucleo_setting() {
    let (cfgr, pll, dck) = rcc_words(|b| {
        b.pllcfgr().write(|w| {
            w.pllsrc().hse();
            w.pllp().div4();
            // SAFETY: PLLM = 4 and PLLN = 200 are in their ranges.
            unsafe { w.pllm().bits(4).plln().bits(200) }
        });
        b.cfgr().write(|w| w.sw().pll().hpre().div1().ppre1().div2().ppre2().div1());
    });
    let c = decode(sws_follows_sw(cfgr), pll, dck, 8_000_000).unwrap();
    assert_eq!(
        c,
        Clocks {
            sysclk: 100_000_000,
            hclk: 100_000_000,
            pclk1: 50_000_000,
            pclk2: 100_000_000,
            tim_apb1: 100_000_000
        }
    );
    assert_eq!(c.tim_apb1, TIMER_HZ);
}

#[test]
fn wrong_clock_settings_decode_to_what_they_are() {
    let nucleo = |b: &rcc::RegisterBlock| {
        b.pllcfgr().write(|w| {
            w.pllsrc().hse();
            w.pllp().div4();
            // SAFETY: in range.
            unsafe { w.pllm().bits(4).plln().bits(200) }
        });
        b.cfgr().write(|w| w.sw().pll().ppre1().div2());
    };
    let tim = |f: &dyn Fn(&rcc::RegisterBlock)| {
        let (c, p, d) = rcc_words(|b| {
            nucleo(b);
            f(b);
        });
        decode(sws_follows_sw(c), p, d, 8_000_000)
    };
    // APB1 ÷4: PCLK1 25 MHz, TIM2 50 MHz.
    assert_eq!(
        tim(&|b| {
            b.cfgr().modify(|_, w| w.ppre1().div4());
        })
        .unwrap()
        .tim_apb1,
        50_000_000
    );
    // APB1 ÷1: TIM2 = PCLK1 = 100 MHz (PCLK1 over its 50 MHz maximum).
    let c = tim(&|b| {
        b.cfgr().modify(|_, w| w.ppre1().div1());
    })
    .unwrap();
    assert_eq!((c.pclk1, c.tim_apb1), (100_000_000, 100_000_000));
    // TIMPRE with APB1 ÷2: TIM2 = HCLK.
    assert_eq!(
        tim(&|b| {
            b.dckcfgr().write(|w| w.timpre().set_bit());
        })
        .unwrap()
        .tim_apb1,
        100_000_000
    );
    // PLL fed by HSI: 16 × 200 / 4 / 4 = 200 MHz.
    assert_eq!(
        tim(&|b| {
            b.pllcfgr().modify(|_, w| w.pllsrc().hsi());
        })
        .unwrap()
        .sysclk,
        200_000_000
    );
    // PLLP ÷2: 200 MHz.
    assert_eq!(
        tim(&|b| {
            b.pllcfgr().modify(|_, w| w.pllp().div2());
        })
        .unwrap()
        .sysclk,
        200_000_000
    );
    // Still on HSI (the switch not done): 16 MHz, TIM2 16 MHz (÷2 ×2).
    let c = tim(&|b| {
        b.cfgr().modify(|_, w| w.sw().hsi());
    })
    .unwrap();
    assert_eq!((c.sysclk, c.tim_apb1), (16_000_000, 16_000_000));
    // AHB ÷2.
    assert_eq!(
        tim(&|b| {
            b.cfgr().modify(|_, w| w.hpre().div2());
        })
        .unwrap()
        .tim_apb1,
        50_000_000
    );
    // PLLM = 1 and PLLN = 20 are wrong configurations.
    // SAFETY: raw field values, the point of the test.
    assert_eq!(
        tim(&|b| {
            b.pllcfgr().modify(|_, w| unsafe { w.pllm().bits(1) });
        }),
        Err(ClockError::BadPllm(1))
    );
    // SAFETY: as above.
    assert_eq!(
        tim(&|b| {
            b.pllcfgr().modify(|_, w| unsafe { w.plln().bits(20) });
        }),
        Err(ClockError::BadPlln(20))
    );
}

// ----- (d) the trigger output: TIM3 CH1 on PB4, TIM2's 16-bit slave -----

/// The words TIM3 and TIM2's master side got, decoded by the PAC, and the
/// two counters in step in the model once TIM2 started.
#[test]
fn tim3_is_started_by_tim2_and_counts_its_ticks_mod_2_16() {
    use stm32f4::stm32f411::tim3;
    let mut t = started(1_000);
    let m = t.bus();
    let w3 = |r| m.last_tim3_write(r).unwrap_or_else(|| panic!("TIM3 {r:?} not written"));
    // SAFETY: PAC register blocks.
    let b3 = unsafe { zeroed_block::<tim3::RegisterBlock>() };
    let poke = |r: TimReg, v: u32| super::model::tim3_poke(&b3, r, v);
    poke(TimReg::Smcr, w3(TimReg::Smcr));
    poke(TimReg::Ccmr1, w3(TimReg::Ccmr1));
    poke(TimReg::Ccer, w3(TimReg::Ccer));
    let smcr = b3.smcr().read();
    assert!(smcr.sms().is_trigger_mode() && smcr.ts().is_itr1(), "trigger mode on ITR1 (TIM2's TRGO)");
    let out = b3.ccmr1_output().read();
    assert!(out.cc1s().is_output() && out.oc1m().is_frozen() && out.oc1pe().is_disabled());
    let ccer = b3.ccer().read();
    assert!(ccer.cc1e().bit_is_set() && ccer.cc1p().bit_is_clear(), "PB4 follows OC1REF, active high");
    assert_eq!((w3(TimReg::Psc), w3(TimReg::Arr)), (0, 0xFFFF));
    // TIM2: TRGO = CNT_EN, MSM set, both before CEN.
    let b = tim_with(TimReg::Cr2, w(m, TimReg::Cr2));
    assert!(b.cr2().read().mms().is_enable());
    let b = tim_with(TimReg::Smcr, w(m, TimReg::Smcr));
    assert!(b.smcr().read().msm().is_sync() && b.smcr().read().sms().is_disabled());
    let cen_at = m.writes.iter().position(|x| x.0 == TimReg::Cr1 && x.1 & 1 != 0).unwrap();
    assert!(m.writes[..cen_at].iter().any(|x| x.0 == TimReg::Smcr), "MSM before CEN");
    // TIM3 was never started by software: TIM2's TRGO did it.
    assert!(m.tim3_writes.iter().all(|x| x.0 != TimReg::Cr1 || x.1 & 1 == 0));
    assert!(m.tim3().cr1().read().cen().bit_is_set(), "TIM3 runs");
    for dt in [0, 1, 65_535, 65_536, 1_000_003, 43 * MS] {
        let to = t.bus().t + dt;
        t.bus_mut().advance(to);
        let m = t.bus();
        assert_eq!(m.cnt3(), m.cnt() & 0xFFFF, "after {dt} more ticks");
    }
    assert!(t.trigger_in_step(), "{:?}", t.step_check());
}

fn w(m: &Model, r: TimReg) -> u32 {
    m.last_write(r).unwrap_or_else(|| panic!("{r:?} not written"))
}

/// A bus that puts a wrong trigger source in TIM3's SMCR (ITR0, TIM1,
/// which never starts): the start-up check must see that TIM3 is not in
/// step, so the board would announce no trigger.
#[derive(Debug)]
struct WrongTs(Model);

impl GpioBus for WrongTs {
    fn gpio_read(&mut self, port: Port, reg: GpioReg) -> u32 {
        self.0.gpio_read(port, reg)
    }
    fn gpio_write(&mut self, port: Port, reg: GpioReg, value: u32) {
        self.0.gpio_write(port, reg, value)
    }
}

impl Bus for WrongTs {
    fn tim_read(&mut self, reg: TimReg) -> u32 {
        self.0.tim_read(reg)
    }
    fn tim_write(&mut self, reg: TimReg, value: u32) {
        self.0.tim_write(reg, value)
    }
    fn tim3_read(&mut self, reg: TimReg) -> u32 {
        self.0.tim3_read(reg)
    }
    fn tim3_write(&mut self, reg: TimReg, value: u32) {
        let value = if reg == TimReg::Smcr { value & !(0b111 << 4) } else { value };
        self.0.tim3_write(reg, value)
    }
    fn usart1_write(&mut self, byte: u8) -> bool {
        self.0.usart1_write(byte)
    }
    fn spin(&mut self, cycles: u32) {
        self.0.spin(cycles)
    }
}

#[test]
fn a_tim3_not_in_step_is_caught_at_start() {
    let mut m = Model::new(5_000);
    configure_pins(&mut m);
    m.advance(7_000);
    let t = Tim2::start(WrongTs(m));
    assert!(!t.trigger_in_step(), "TIM3 never started: {:?}", t.step_check());
    assert!(started(5_000).trigger_in_step());
}

#[test]
#[should_panic(expected = "without TIM2's MSM")]
fn the_model_refuses_a_slave_start_without_msm() {
    // What RM0383 does not give (the slave's lag without MSM), the model
    // does not make up.
    let mut m = Model::new(0);
    m.tim3_write(TimReg::Smcr, super::tim2::TIM3_SMCR);
    m.tim_write(TimReg::Cr2, super::tim2::CR2_MMS_ENABLE);
    m.tim_write(TimReg::Cr1, 1);
}

const THR: u64 = 200 * US;

/// The Nucleo's board with its trigger.
fn trigger_board() -> BoardInfo {
    let caps = Capabilities::GPIO_ECHO
        | Capabilities::UART_ECHO
        | Capabilities::LOOPBACK
        | Capabilities::HW_CAPTURE
        | Capabilities::TRIGGER;
    BoardInfo::new("model-nucleo", TIMER_HZ, TimerBits::B32, caps)
        .with_uart_echo_floor(LOOP.baud)
        .with_response_lag((2 * LOOP.byte_ticks()) as u32)
}

/// A GPIO-echo run through the registers with `--trigger-above thr`, the
/// target answering every stimulus `latency` later (or never).
fn trigger_run(latency: Option<u64>, thr: u64, interval: u64, timeout: u64, count: u64) -> (Sim, u64) {
    let hw = started(1_000);
    let origin = origin(hw.bus());
    let mut s = Sim::with_board(hw, trigger_board());
    if let Some(latency) = latency {
        s.m().target = Target::GpioEcho { edge: Edge::Rising, latency, pulse: Some(20 * US) };
    }
    let mut c = echo(Mode::GpioEcho, Stimulus::Edge(Edge::Rising), count);
    c.interval_ticks = interval as u32;
    c.timeout_ticks = timeout as u32;
    c.trigger_ticks = thr as u32;
    let st = s.measure(c, (count + 5) * interval);
    assert_eq!(st.taken, count, "{st:?}");
    settle(&mut s);
    (s, origin)
}

/// Run on past the Stopped for 100 µs: a pulse still high falls by its
/// compare, the run's end notwithstanding.
fn settle(s: &mut Sim) {
    s.stopped = None;
    let end = s.hw.bus().t + 100 * US;
    s.run_until(end);
}

/// PB4's pulses: each rise, with its fall exactly 10 µs later.
fn pb4_pulses(m: &Model, origin: u64) -> Vec<u64> {
    let e = &m.trigger_edges;
    assert_eq!(e.len() % 2, 0, "PB4 left high: {e:?}");
    e.chunks(2)
        .map(|p| {
            assert!(p[0].1 && !p[1].1, "{p:?}");
            assert_eq!(p[1].0 - p[0].0, LOOP.trigger_width_ticks(), "pulse width: {p:?}");
            p[0].0 - origin
        })
        .collect()
}

/// The rise is TIM3's compare: at the first tick past the threshold,
/// exactly, for answers a tick late, well late and never; an answer in
/// time never pulses; the flags follow.
#[test]
fn pb4_rises_at_the_first_tick_past_the_threshold_by_tim3s_compare() {
    for (latency, flagged) in
        [(Some(THR - 10 * US), false), (Some(THR + 1), true), (Some(THR + 50 * US), true), (None, true)]
    {
        let (s, origin) = trigger_run(latency, THR, MS, 500 * US, 6);
        let flags: Vec<bool> = s.samples.iter().map(|x| x.triggered).collect();
        assert_eq!(flags, [flagged; 6], "latency {latency:?}");
        let want: Vec<u64> =
            if flagged { s.samples.iter().map(|x| x.stimulus_tick + THR + 1).collect() } else { Vec::new() };
        assert_eq!(pb4_pulses(s.hw.bus(), origin), want, "latency {latency:?}");
        if let Some(l) = latency {
            assert!(s.latencies().iter().all(|&x| x == Some(l as u32)), "{:?}", s.latencies());
        }
        assert!(!s.hw.bus().pb4(), "PB4 idles low");
    }
}

/// 1.5 ms is 150 000 ticks, beyond TIM3's half period (32 768): the
/// compare is armed on a wake-up, and the rise is still exact.
#[test]
fn a_threshold_beyond_tim3s_half_period_is_still_exact() {
    let thr = 1_500 * US;
    let (s, origin) = trigger_run(Some(2 * MS), thr, 5 * MS, 4 * MS, 4);
    assert!(s.samples.iter().all(|x| x.triggered));
    let want: Vec<u64> = s.samples.iter().map(|x| x.stimulus_tick + thr + 1).collect();
    assert_eq!(pb4_pulses(s.hw.bus(), origin), want);
    let (s, origin) = trigger_run(Some(thr - 5 * US), thr, 5 * MS, 4 * MS, 4);
    assert!(s.samples.iter().all(|x| !x.triggered), "{:?}", s.samples);
    assert_eq!(pb4_pulses(s.hw.bus(), origin), Vec::<u64>::new());
}

/// uart-echo with identity bytes: a start bit does not say whose answer
/// it is, so the engine task disarms when the byte is read. An echo well
/// before the threshold never pulses; one past it pulses exactly.
#[test]
fn uart_echo_answers_trigger_by_the_rule() {
    for (latency, flagged) in [(100 * US, false), (THR + 30 * US, true)] {
        let hw = started(1_000);
        let origin = origin(hw.bus());
        let mut s = Sim::with_board(hw, trigger_board());
        s.m().wire_tx();
        s.m().uart_response_line();
        s.m().target = Target::UartEcho { latency };
        let mut c = echo(Mode::UartEcho, Stimulus::Identified, 5);
        c.trigger_ticks = THR as u32;
        let st = s.measure(c, 20 * MS);
        assert_eq!((st.taken, st.timeouts), (5, 0), "{st:?}");
        settle(&mut s);
        let flags: Vec<bool> = s.samples.iter().map(|x| x.triggered).collect();
        assert_eq!(flags, [flagged; 5], "latency {latency}: {:?}", s.samples);
        let want: Vec<u64> =
            if flagged { s.samples.iter().map(|x| x.stimulus_tick + THR + 1).collect() } else { Vec::new() };
        assert_eq!(pb4_pulses(s.hw.bus(), origin), want);
    }
}
