//! The host link's receive path against a model of the STM32F411's USART
//! (one-byte DR, RXNE, ORE, IDLE; RM0383 §19) and DMA stream (NDTR, CIRC,
//! HTIF/TCIF; RM0383 §9), fed a byte every 10.85 µs of simulated time while
//! a simulated engine task holds priority 2 for 60–100 µs at a time. The
//! register words are checked against the PAC's own field readers.

use super::*;
use crate::uart::read_burst;
use embedded_hal_nb::nb;
use embedded_hal_nb::serial::{ErrorKind, ErrorType, Read};
use latprobe_protocol::{decode_message, encode_message, Feed, FrameDecoder, HostMsg, MAX_FRAME_LEN};
use std::vec::Vec;
use stm32f4::stm32f411::{dma1, usart1};

const RING: usize = 256;
/// One byte (start, 8 data, stop) at 921 600 Bd, in ns.
const BYTE_NS: u64 = 10_850;
const STEP_NS: u64 = 50;
const DR_ADDR: u32 = 0x4000_4404;
const RING_ADDR: u32 = 0x2000_1000;

// ---------------------------------------------------------------------------
// The register words, decoded by the PAC.

/// A zeroed register block in RAM, to decode written words with the PAC's
/// readers (its field names and positions are the SVD's, not ours).
fn zeroed<T>() -> std::boxed::Box<T> {
    // SAFETY: the PAC's register blocks are plain integers in cells
    // (vcell::VolatileCell<u32/u16>) and padding: all-zero is a valid value.
    std::boxed::Box::new(unsafe { core::mem::zeroed() })
}

/// Records every write, answers reads from the last write (EN reads back 0
/// after a write of 0, as a stream that was idle).
#[derive(Default)]
struct Recorder(Vec<(Reg, u32)>);

impl Regs for Recorder {
    fn read(&mut self, reg: Reg) -> u32 {
        self.0.iter().rev().find(|(r, _)| *r == reg).map_or(0, |(_, v)| *v)
    }
    fn write(&mut self, reg: Reg, value: u32) {
        self.0.push((reg, value));
    }
}

#[test]
fn start_writes_what_rm0383_asks_in_its_order() {
    let mut r = Recorder::default();
    // What the HAL left: UE, TE, RE, and RXNEIE from an earlier listen();
    // DMAT for the TX stream.
    r.write(Reg::UsartCr1, (1 << 13) | (1 << 3) | (1 << 2) | bits::cr1::RXNEIE);
    r.write(Reg::UsartCr3, 1 << 7);
    assert!(start(&mut r, USART2_RX_CHANNEL, DR_ADDR, RING_ADDR, RING as u16));
    r.0.drain(..2);
    let order: Vec<Reg> = r.0.iter().map(|(reg, _)| *reg).collect();
    use Reg::*;
    assert_eq!(order, [DmaCr, DmaHifcr, DmaPar, DmaM0ar, DmaNdtr, DmaCr, DmaCr, UsartCr3, UsartCr1]);
    let w = |i: usize| r.0[i].1;
    assert_eq!((w(0), w(2), w(3), w(4)), (0, DR_ADDR, RING_ADDR, RING as u32));

    let dma = zeroed::<dma1::RegisterBlock>();
    let st = dma.st(5);
    // SAFETY: a write of a word to an in-RAM copy of the block.
    st.cr().write(|x| unsafe { x.bits(w(5)) });
    let cr = st.cr().read();
    assert_eq!(cr.chsel().bits(), 4, "USART2_RX: DMA1 stream 5 channel 4 (table 27)");
    assert!(cr.dir().is_peripheral_to_memory());
    assert!(cr.circ().is_enabled() && cr.minc().is_incremented() && cr.pinc().is_fixed());
    assert!(cr.psize().is_bits8() && cr.msize().is_bits8());
    assert!(cr.htie().is_enabled() && cr.tcie().is_enabled() && cr.teie().is_enabled());
    assert!(cr.dmeie().is_disabled() && cr.pfctrl().is_dma() && cr.dbm().is_disabled());
    assert!(cr.pl().is_high());
    assert!(cr.en().is_disabled(), "configured first");
    st.cr().write(|x| unsafe { x.bits(w(6)) });
    assert!(st.cr().read().en().is_enabled() && w(6) == w(5) | bits::cr::EN, "then EN alone");
    st.ndtr().write(|x| unsafe { x.bits(w(4)) });
    assert_eq!(st.ndtr().read().ndt().bits(), 256);

    // HIFCR is write-only: compare with the word the PAC's writer makes.
    dma.hifcr()
        .write(|x| x.cfeif5().clear().cdmeif5().clear().cteif5().clear().chtif5().clear().ctcif5().clear());
    // SAFETY: reads the in-RAM copy just written.
    assert_eq!(w(1), unsafe { *dma.hifcr().as_ptr() }, "every stream 5 flag, nothing of 4, 6, 7");

    let usart = zeroed::<usart1::RegisterBlock>();
    usart.cr3().write(|x| unsafe { x.bits(w(7) as u16) });
    let cr3 = usart.cr3().read();
    assert!(cr3.dmar().is_enabled() && cr3.eie().is_enabled());
    assert!(cr3.dmat().is_enabled(), "the TX stream's DMAT kept");
    usart.cr1().write(|x| unsafe { x.bits(w(8) as u16) });
    let cr1 = usart.cr1().read();
    assert!(cr1.idleie().is_enabled() && cr1.rxneie().is_disabled());
    assert!(cr1.ue().is_enabled() && cr1.te().is_enabled() && cr1.re().is_enabled(), "kept");
}

#[test]
fn flag_bits_are_the_pacs() {
    let dma = zeroed::<dma1::RegisterBlock>();
    for (bit, check) in [
        (bits::hisr5::HTIF, (|r: &dma1::hisr::R| r.htif5().bit_is_set()) as fn(&dma1::hisr::R) -> bool),
        (bits::hisr5::TCIF, |r| r.tcif5().bit_is_set()),
        (bits::hisr5::TEIF, |r| r.teif5().bit_is_set()),
        (bits::hisr5::DMEIF, |r| r.dmeif5().bit_is_set()),
        (bits::hisr5::FEIF, |r| r.feif5().bit_is_set()),
    ] {
        // SAFETY: writes the in-RAM copy (HISR is read-only on the chip).
        unsafe { *dma.hisr().as_ptr() = bit };
        assert!(check(&dma.hisr().read()), "{bit:#x}");
    }
    let usart = zeroed::<usart1::RegisterBlock>();
    for (bit, check) in [
        (bits::sr::PE, (|r: &usart1::sr::R| r.pe().bit_is_set()) as fn(&usart1::sr::R) -> bool),
        (bits::sr::FE, |r| r.fe().bit_is_set()),
        (bits::sr::NF, |r| r.nf().bit_is_set()),
        (bits::sr::ORE, |r| r.ore().bit_is_set()),
        (bits::sr::IDLE, |r| r.idle().bit_is_set()),
        (bits::sr::RXNE, |r| r.rxne().bit_is_set()),
    ] {
        usart.sr().write(|x| unsafe { x.bits(bit as u16) });
        assert!(check(&usart.sr().read()), "{bit:#x}");
    }
}

// ---------------------------------------------------------------------------
// The chip model.

/// USART2 and DMA1 stream 5 as RM0383 describes them, for what this path
/// uses.
struct Chip {
    // USART (RM0383 §19.6.1): one data register.
    dr: u8,
    rxne: bool,
    ore: bool,
    idle: bool,
    /// A byte came since the last IDLE (IDLE is set once per idle line).
    idle_armed: bool,
    /// SR was read: the next DR read completes the clear sequence.
    sr_read: bool,
    cr1: u32,
    cr3: u32,
    /// Bytes that arrived while RXNE was set (ORE): lost in the shift register.
    lost: usize,
    // DMA stream 5 (RM0383 §9.3.10, §9.5).
    cr: u32,
    ndtr: u32,
    reload: u32,
    hisr: u32,
    ring: [u8; RING],
}

impl Chip {
    fn new() -> Self {
        Self {
            dr: 0,
            rxne: false,
            ore: false,
            idle: false,
            idle_armed: false,
            sr_read: false,
            cr1: (1 << 13) | (1 << 3) | (1 << 2),
            cr3: 0,
            lost: 0,
            cr: 0,
            ndtr: 0,
            reload: 0,
            hisr: 0,
            ring: [0xEE; RING],
        }
    }

    /// A byte's stop bit: into DR, or lost when RXNE is still set.
    fn arrive(&mut self, b: u8) {
        if self.rxne {
            self.ore = true;
            self.lost += 1;
        } else {
            self.dr = b;
            self.rxne = true;
        }
        self.idle_armed = true;
        self.serve_dma();
    }

    /// The DMA answers RXNE within a few bus cycles: here, at once.
    fn serve_dma(&mut self) {
        let on = self.cr & bits::cr::EN != 0 && self.cr3 & bits::cr3::DMAR != 0;
        if !(on && self.rxne) {
            return;
        }
        let at = (self.reload - self.ndtr) as usize;
        self.ring[at] = self.dr;
        self.rxne = false; // the DMA's read of DR
        self.ndtr -= 1;
        if self.ndtr == self.reload / 2 {
            self.hisr |= bits::hisr5::HTIF;
        }
        if self.ndtr == 0 {
            self.hisr |= bits::hisr5::TCIF;
            assert!(self.cr & bits::cr::CIRC != 0, "the model runs circular only");
            self.ndtr = self.reload;
        }
    }

    fn line_idle(&mut self) {
        if self.idle_armed {
            self.idle = true;
            self.idle_armed = false;
        }
    }

    fn usart_irq_pending(&self) -> bool {
        (self.cr1 & bits::cr1::RXNEIE != 0 && (self.rxne || self.ore))
            || (self.cr1 & bits::cr1::IDLEIE != 0 && self.idle)
            || (self.cr3 & bits::cr3::EIE != 0 && self.cr3 & bits::cr3::DMAR != 0 && self.ore)
    }
}

impl Regs for Chip {
    fn read(&mut self, reg: Reg) -> u32 {
        match reg {
            Reg::UsartSr => {
                self.sr_read = true;
                use bits::sr::*;
                [(self.rxne, RXNE), (self.ore, ORE), (self.idle, IDLE)]
                    .iter()
                    .filter(|(on, _)| *on)
                    .fold(0, |a, (_, b)| a | b)
            }
            Reg::UsartDr => {
                self.rxne = false;
                if self.sr_read {
                    self.ore = false;
                    self.idle = false;
                }
                self.sr_read = false;
                u32::from(self.dr)
            }
            Reg::UsartCr1 => self.cr1,
            Reg::UsartCr3 => self.cr3,
            Reg::DmaCr => self.cr,
            Reg::DmaNdtr => self.ndtr,
            Reg::DmaHisr => self.hisr,
            Reg::DmaPar | Reg::DmaM0ar | Reg::DmaHifcr => 0,
        }
    }

    fn write(&mut self, reg: Reg, value: u32) {
        match reg {
            Reg::UsartCr1 => self.cr1 = value,
            Reg::UsartCr3 => self.cr3 = value,
            Reg::DmaCr => self.cr = value,
            Reg::DmaNdtr => {
                self.ndtr = value;
                self.reload = value;
            }
            Reg::DmaHifcr => self.hisr &= !value,
            Reg::DmaPar => assert_eq!(value, DR_ADDR),
            Reg::DmaM0ar => assert_eq!(value, RING_ADDR),
            Reg::UsartSr | Reg::UsartDr | Reg::DmaHisr => {}
        }
    }
}

/// The HAL's `read` (stm32f4xx-hal 0.23, `read_u16`): any error flag → a
/// read of DR to clear it, which drops the byte waiting there, and Err.
struct HalRx<'a>(&'a mut Chip);

impl ErrorType for HalRx<'_> {
    type Error = ErrorKind;
}

impl Read<u8> for HalRx<'_> {
    fn read(&mut self) -> nb::Result<u8, ErrorKind> {
        let sr = self.0.read(Reg::UsartSr);
        if sr & bits::sr::ORE != 0 {
            self.0.read(Reg::UsartDr);
            return Err(nb::Error::Other(ErrorKind::Overrun));
        }
        if sr & bits::sr::RXNE != 0 {
            return Ok(self.0.read(Reg::UsartDr) as u8);
        }
        Err(nb::Error::WouldBlock)
    }
}

/// The ring as the consumer sees it: the half count of the event ISR, NDTR.
struct ChipRing<'a> {
    chip: &'a mut Chip,
    halves: u32,
}

impl RingSource for ChipRing<'_> {
    fn position(&mut self) -> Position {
        Position { halves: self.halves, ndtr: self.chip.read(Reg::DmaNdtr) }
    }
    fn byte(&mut self, index: usize) -> u8 {
        self.chip.ring[index]
    }
}

// ---------------------------------------------------------------------------
// The simulation.

#[derive(Clone, Copy, PartialEq, Eq)]
enum Path {
    /// Today's bin: RXNEIE, an interrupt at priority 2 calling read_burst.
    Interrupt,
    /// DMA into the ring; the consumer at priority 2 woken by IDLE and by
    /// the event ISR above it.
    Dma,
}

struct Outcome {
    delivered: Vec<u8>,
    usart_errors: u32,
    overruns: u32,
    lost_in_usart: usize,
}

/// Send `bytes` back to back from `t0`, with the engine task holding
/// priority 2 during each of `busy` (start, length) in ns.
fn simulate(path: Path, t0: u64, bytes: &[u8], busy: &[(u64, u64)]) -> Outcome {
    let mut chip = Chip::new();
    let mut reader = RingReader::<RING>::new();
    let mut halves = 0u32;
    let mut consumer_woken = false;
    match path {
        Path::Interrupt => chip.cr1 |= bits::cr1::RXNEIE,
        Path::Dma => assert!(start(&mut chip, USART2_RX_CHANNEL, DR_ADDR, RING_ADDR, RING as u16)),
    }
    let mut out = Outcome { delivered: Vec::new(), usart_errors: 0, overruns: 0, lost_in_usart: 0 };
    let last = t0 + bytes.len() as u64 * BYTE_NS;
    let end = busy.iter().map(|(s, l)| s + l).max().unwrap_or(0).max(last) + 20 * BYTE_NS;
    let mut next = 0;
    let mut t = 0;
    while t <= end {
        // Stop bit of byte `next` at t0 + (next + 1) byte times.
        while next < bytes.len() && t0 + (next as u64 + 1) * BYTE_NS <= t {
            chip.arrive(bytes[next]);
            next += 1;
        }
        if next == bytes.len() && t >= last + BYTE_NS {
            chip.line_idle();
        }
        // The event ISR, above the engine: runs whenever a flag is up.
        if path == Path::Dma && chip.hisr != 0 {
            let ev = dma_events(&mut chip);
            assert!(!ev.transfer_error);
            halves = halves.wrapping_add(ev.halves);
            consumer_woken = true;
        }
        let engine_busy = busy.iter().any(|&(s, l)| t >= s && t < s + l);
        if !engine_busy {
            match path {
                Path::Interrupt if chip.usart_irq_pending() => {
                    let mut buf = [0u8; 32];
                    let (n, errors) = read_burst(&mut HalRx(&mut chip), &mut buf);
                    out.usart_errors += errors;
                    out.delivered.extend_from_slice(&buf[..n]);
                }
                Path::Dma if chip.usart_irq_pending() || consumer_woken => {
                    consumer_woken = false;
                    out.usart_errors += usart_events(&mut chip).errors;
                    let mut buf = [0u8; 32];
                    let mut src = ChipRing { chip: &mut chip, halves };
                    out.overruns += reader.drain(&mut src, &mut buf, |b| out.delivered.extend_from_slice(b));
                }
                _ => {}
            }
        }
        t += STEP_NS;
    }
    out.lost_in_usart = chip.lost;
    out
}

fn frame(msg: &HostMsg) -> Vec<u8> {
    let mut buf = [0u8; MAX_FRAME_LEN];
    let n = encode_message(msg, &mut buf).expect("frame");
    buf[..n].to_vec()
}

/// The host messages in `bytes`, and how many frames were damaged.
fn decode(bytes: &[u8]) -> (Vec<HostMsg>, usize) {
    let mut dec: FrameDecoder = FrameDecoder::new();
    let (mut msgs, mut bad) = (Vec::new(), 0);
    let mut rest = bytes;
    loop {
        match dec.feed(rest) {
            Feed::NeedMore => break,
            Feed::Bad { rest: r, .. } => {
                bad += 1;
                rest = r;
            }
            Feed::Frame { frame, rest: r } => {
                match decode_message::<HostMsg>(frame) {
                    Ok(m) => msgs.push(m),
                    Err(_) => bad += 1,
                }
                rest = r;
            }
        }
    }
    (msgs, bad)
}

/// A run's engine: a 60–100 µs task every 400 µs (deterministic lengths).
fn engine_tasks(from: u64, to: u64) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let (mut t, mut x) = (from, 12_345u32);
    while t < to {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        out.push((t, 60_000 + u64::from(x >> 16) % 40_001));
        t += 400_000;
    }
    out
}

// Test 1: the defect. A Stop sent while the engine task runs loses bytes on
// the old path, and does not decode.
#[test]
fn old_path_loses_a_stop_sent_while_the_engine_runs() {
    let stop = frame(&HostMsg::Stop);
    assert!(stop.len() >= 4, "a Stop is a few bytes: {stop:?}");
    // The engine task starts 5 µs before the Stop's first byte, for 80 µs.
    let t0 = 1_000_000;
    let o = simulate(Path::Interrupt, t0, &stop, &[(t0 - 5_000, 80_000)]);
    assert!(o.lost_in_usart > 0, "bytes lost in the USART (ORE)");
    assert!(o.delivered.len() < stop.len(), "delivered {:?} of {:?}", o.delivered, stop);
    assert!(o.usart_errors > 0, "the overrun is seen, the bytes are gone");
    let (msgs, _) = decode(&o.delivered);
    assert!(!msgs.contains(&HostMsg::Stop), "the Stop did not survive: {msgs:?}");

    // Across a run: Stops at many phases against the engine's tasks.
    let (mut failed, mut tries) = (0, 0);
    for k in 0..40u64 {
        let t0 = 500_000 + k * 1_000_000 / 7;
        let o = simulate(Path::Interrupt, t0, &stop, &engine_tasks(100_000, t0 + 400_000));
        tries += 1;
        if !decode(&o.delivered).0.contains(&HostMsg::Stop) {
            failed += 1;
        }
    }
    assert!(failed > 0, "some Stops are lost on the old path ({failed} of {tries})");
    std::println!("old path: {failed} of {tries} Stops lost");
}

// Test 2: the fix. The same Stops through the DMA ring, the consumer held
// off by the same engine tasks: every byte, every Stop.
#[test]
fn dma_path_delivers_every_stop_while_the_engine_runs() {
    let stop = frame(&HostMsg::Stop);
    let t0 = 1_000_000;
    let o = simulate(Path::Dma, t0, &stop, &[(t0 - 5_000, 80_000)]);
    assert_eq!((o.lost_in_usart, o.usart_errors, o.overruns), (0, 0, 0));
    assert_eq!(o.delivered, stop);
    assert_eq!(decode(&o.delivered), (std::vec![HostMsg::Stop], 0));
    for k in 0..40u64 {
        let t0 = 500_000 + k * 1_000_000 / 7;
        let o = simulate(Path::Dma, t0, &stop, &engine_tasks(100_000, t0 + 400_000));
        assert_eq!(o.delivered, stop, "phase {k}");
        assert_eq!((o.lost_in_usart, o.usart_errors, o.overruns), (0, 0, 0));
    }
}

/// `n` Ping frames with nonces from 0, back to back.
fn pings(n: u32) -> Vec<u8> {
    (0..n).flat_map(|k| frame(&HostMsg::Ping { nonce: k })).collect()
}

fn nonces(msgs: &[HostMsg]) -> Vec<u32> {
    msgs.iter().map(|m| if let HostMsg::Ping { nonce } = m { *nonce } else { panic!("{m:?}") }).collect()
}

// A long stream through the ring, wrapping it several times, with a
// consumer held off by engine tasks of up to 100 µs: the ring's span
// (256 bytes, 2.78 ms) covers the worst case many times over.
#[test]
fn dma_path_wraps_the_ring_without_a_loss() {
    let bytes = pings(200);
    assert!(bytes.len() > 4 * RING);
    let t0 = 200_000;
    let busy = engine_tasks(150_000, t0 + bytes.len() as u64 * BYTE_NS);
    let o = simulate(Path::Dma, t0, &bytes, &busy);
    assert_eq!((o.lost_in_usart, o.usart_errors, o.overruns), (0, 0, 0));
    assert_eq!(o.delivered, bytes);
    let (msgs, bad) = decode(&o.delivered);
    assert_eq!((nonces(&msgs), bad), ((0..200).collect::<Vec<_>>(), 0));
}

// A consumer held off longer than the ring's span (a 4 ms task while bytes
// stream): the overrun is counted and what the engine is given is the
// stream with a gap, never a stale byte of an earlier lap.
#[test]
fn a_consumer_later_than_the_ring_is_counted_not_fed_stale_bytes() {
    let bytes = pings(150);
    let t0 = 100_000;
    let o = simulate(Path::Dma, t0, &bytes, &[(t0 + 300_000, 4_000_000)]);
    assert_eq!(o.lost_in_usart, 0, "the DMA took every byte");
    assert_eq!(o.overruns, 1, "one overrun, counted");
    // A prefix of the stream, then its suffix: nothing else.
    let d = &o.delivered;
    let split =
        (0..=d.len()).find(|&p| d[..p] == bytes[..p] && d[p..] == bytes[bytes.len() - (d.len() - p)..]);
    assert!(split.is_some(), "the stream with one gap: {d:?}");
    assert!(bytes.len() - d.len() > RING, "more than a ring went by");
    let (msgs, bad) = decode(d);
    let got = nonces(&msgs);
    assert!(got.windows(2).all(|w| w[0] < w[1]), "in order, no repeat from a stale lap: {got:?}");
    assert!(bad <= 1, "at most the frame cut by the gap: {bad}");
    assert_eq!(*got.last().unwrap(), 149);
}

// ---------------------------------------------------------------------------
// The reader on its own.

/// A ring whose DMA is moved by hand; each byte read can move it on.
struct Hand {
    ring: [u8; 8],
    written: u32,
    per_read: u32,
}

impl Hand {
    fn push(&mut self, n: u32) {
        for _ in 0..n {
            self.ring[self.written as usize % 8] = self.written as u8;
            self.written += 1;
        }
    }
}

impl RingSource for Hand {
    fn position(&mut self) -> Position {
        // Exact events, NDTR as the stream shows it.
        let ndtr = 8 - self.written % 8;
        Position { halves: self.written / 4, ndtr }
    }
    fn byte(&mut self, index: usize) -> u8 {
        let b = self.ring[index];
        self.push(self.per_read);
        b
    }
}

#[test]
fn written_counts_a_pending_event() {
    type R = RingReader<8>;
    // In the first half of lap 3 with the complete event counted: 24 + 2.
    assert_eq!(R::written(Position { halves: 6, ndtr: 6 }), 26);
    // Its complete event not counted yet (odd count, NDTR reloaded).
    assert_eq!(R::written(Position { halves: 5, ndtr: 6 }), 26);
    // The half event not counted yet (even count, second half).
    assert_eq!(R::written(Position { halves: 4, ndtr: 3 }), 21);
    assert_eq!(R::written(Position { halves: 5, ndtr: 3 }), 21);
    // NDTR read as 0 at the reload is the wrap.
    assert_eq!(R::written(Position { halves: 1, ndtr: 0 }), 8);
    // Wrapping of the counts is consistent.
    let p = Position { halves: u32::MAX, ndtr: 2 };
    assert_eq!(R::written(p), (u32::MAX / 2).wrapping_mul(8).wrapping_add(6));
}

#[test]
fn reader_takes_across_the_wrap_and_sees_an_overrun() {
    let mut h = Hand { ring: [0; 8], written: 0, per_read: 0 };
    let mut r = RingReader::<8>::new();
    let mut buf = [0u8; 8];
    assert_eq!(r.take(&mut h, &mut buf), Taken::Empty);
    h.push(6);
    assert_eq!(r.take(&mut h, &mut buf), Taken::Bytes(6));
    h.push(5); // wraps
    assert_eq!(r.take(&mut h, &mut buf), Taken::Bytes(5));
    assert_eq!(&buf[..5], &[6, 7, 8, 9, 10]);
    h.push(8); // exactly a ring: nothing overwritten yet
    assert_eq!(r.take(&mut h, &mut buf), Taken::Bytes(8));
    assert_eq!(buf, [11, 12, 13, 14, 15, 16, 17, 18]);
    h.push(9); // a ring and one: the oldest is gone
    assert_eq!(r.take(&mut h, &mut buf), Taken::Overrun { skipped: 9 });
    assert_eq!(r.overruns(), 1);
    h.push(2);
    assert_eq!(r.take(&mut h, &mut buf), Taken::Bytes(2));
    assert_eq!(&buf[..2], &[28, 29]);
}

#[test]
fn reader_drops_a_copy_the_dma_overtook() {
    // Two bytes written per byte copied: by the end of a copy of 6 the DMA
    // has written 12 more, so the first ones copied were the next lap's.
    let mut h = Hand { ring: [0; 8], written: 0, per_read: 0 };
    h.push(6);
    h.per_read = 2;
    let mut r = RingReader::<8>::new();
    let mut buf = [0u8; 8];
    assert!(matches!(r.take(&mut h, &mut buf), Taken::Overrun { .. }));
    assert_eq!(r.overruns(), 1);
    // A slow DMA during the copy is fine.
    h.per_read = 0;
    h.push(3);
    let mut got = Vec::new();
    assert_eq!(r.drain(&mut h, &mut buf, |b| got.extend_from_slice(b)), 0);
    assert_eq!(got.len(), 3);
}

#[test]
fn usart_events_count_errors_and_leave_a_byte_to_the_dma() {
    let mut chip = Chip::new();
    chip.idle = true;
    chip.ore = true;
    let ev = usart_events(&mut chip);
    assert_eq!(ev, UsartEvents { idle: true, errors: 1 });
    assert!(!chip.idle && !chip.ore, "cleared by SR then DR");
    // RXNE up: the DMA's read of DR is the sequence's second half.
    chip.idle = true;
    chip.rxne = true;
    chip.dr = 0x42;
    let ev = usart_events(&mut chip);
    assert!(ev.idle && chip.rxne, "DR not read here");
}
