//! The RTT link without hardware: a fake probe RAM holding a real RTT
//! control block (the layout rtt-target writes), a firmware-side writer with
//! rtt-target's `NoBlockSkip` rule (a chunk goes in whole or not at all),
//! and the host's real reader (`latprobe::source::rtt`) feeding the real
//! frame decoder. Recorded frame streams go through rings of odd sizes so
//! that frames straddle the wrap, and through a reader that falls behind.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use latprobe::link::{Deframer, Incoming};
use latprobe::source::rtt::{self, ControlBlock, LogSink, RttSource, TargetMemory};
use latprobe::source::{ByteSource, Read};
use latprobe_protocol::{encode_message, Heartbeat, LogLevel, ProbeMsg, MAX_FRAME_LEN};

const RAM: u64 = 0x2000_0000;
const RAM_LEN: usize = 16 * 1024;
const CB: u64 = RAM + 0x400;

/// The probe's RAM, shared between the "firmware" (the test) and the host
/// reader (through [`Mem`]).
#[derive(Debug)]
struct Ram(Vec<u8>);

impl Ram {
    fn u32(&self, a: u64) -> u32 {
        let i = (a - RAM) as usize;
        u32::from_le_bytes(self.0[i..i + 4].try_into().unwrap())
    }
    fn set_u32(&mut self, a: u64, v: u32) {
        let i = (a - RAM) as usize;
        self.0[i..i + 4].copy_from_slice(&v.to_le_bytes());
    }
    fn put(&mut self, a: u64, data: &[u8]) {
        let i = (a - RAM) as usize;
        self.0[i..i + data.len()].copy_from_slice(data);
    }
}

#[derive(Debug, Clone)]
struct Mem(Arc<Mutex<Ram>>);

impl TargetMemory for Mem {
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> std::io::Result<()> {
        let ram = self.0.lock().unwrap();
        let i = addr.checked_sub(RAM).filter(|i| (*i as usize) + buf.len() <= RAM_LEN);
        let i = i.ok_or_else(|| std::io::Error::other(format!("read outside RAM at {addr:#x}")))? as usize;
        buf.copy_from_slice(&ram.0[i..i + buf.len()]);
        Ok(())
    }
    fn write(&mut self, addr: u64, data: &[u8]) -> std::io::Result<()> {
        let mut ram = self.0.lock().unwrap();
        ram.put(addr, data);
        Ok(())
    }
}

/// A channel as the firmware sees it: descriptor address, buffer, size.
#[derive(Debug, Clone, Copy)]
struct FwChan {
    desc: u64,
    buf: u64,
    size: u32,
}

/// A fake target with up 0 "defmt", up 1 "latprobe", down 0 "latprobe".
fn target(defmt_size: u32, frames_size: u32, down_size: u32) -> (Mem, [FwChan; 3]) {
    let mut ram = Ram(vec![0xA5; RAM_LEN]);
    let names = RAM + 0x100;
    ram.put(names, b"defmt\0latprobe\0");
    let mut next = RAM + 0x1000;
    let mut chans = Vec::new();
    for (i, (name, size)) in
        [(names, defmt_size), (names + 6, frames_size), (names + 6, down_size)].into_iter().enumerate()
    {
        let desc = CB + 24 + 24 * i as u64;
        ram.set_u32(desc, name as u32);
        ram.set_u32(desc + 4, next as u32);
        ram.set_u32(desc + 8, size);
        ram.set_u32(desc + 12, 0);
        ram.set_u32(desc + 16, 0);
        ram.set_u32(desc + 20, 0);
        chans.push(FwChan { desc, buf: next, size });
        next += u64::from(size) + 16;
    }
    ram.set_u32(CB + 16, 2);
    ram.set_u32(CB + 20, 1);
    ram.put(CB, rtt::RTT_ID);
    (Mem(Arc::new(Mutex::new(ram))), [chans[0], chans[1], chans[2]])
}

/// rtt-target's NoBlockSkip write: all of `data` or nothing.
fn fw_write(mem: &Mem, ch: FwChan, data: &[u8]) -> bool {
    let mut ram = mem.0.lock().unwrap();
    let (w, r, size) = (ram.u32(ch.desc + 12) as usize, ram.u32(ch.desc + 16) as usize, ch.size as usize);
    let free = if r > w { r - w - 1 } else { size - w + r - 1 };
    if data.len() > free {
        return false;
    }
    let first = data.len().min(size - w);
    ram.put(ch.buf + w as u64, &data[..first]);
    ram.put(ch.buf, &data[first..]);
    ram.set_u32(ch.desc + 12, ((w + data.len()) % size) as u32);
    true
}

/// The firmware's read of a down channel.
fn fw_read(mem: &Mem, ch: FwChan) -> Vec<u8> {
    let mut ram = mem.0.lock().unwrap();
    let (w, mut r, size) = (ram.u32(ch.desc + 12) as usize, ram.u32(ch.desc + 16) as usize, ch.size as usize);
    let mut out = Vec::new();
    while r != w {
        out.push(ram.0[(ch.buf - RAM) as usize + r]);
        r = (r + 1) % size;
    }
    ram.set_u32(ch.desc + 16, r as u32);
    out
}

/// A recorded stream: heartbeat frames numbered by their tick.
fn recorded(n: u64) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| {
            let mut f = [0u8; MAX_FRAME_LEN];
            let msg = ProbeMsg::Heartbeat(Heartbeat {
                tick: i,
                nonce: 0,
                running: true,
                taken: i * 7,
                ..Default::default()
            });
            let len = encode_message(&msg, &mut f).unwrap();
            f[..len].to_vec()
        })
        .collect()
}

/// Everything the reader hands out, decoded: heartbeat ticks and log lines.
#[derive(Debug, Default)]
struct Seen {
    ticks: Vec<u64>,
    logs: Vec<String>,
}

fn drain(src: &mut dyn ByteSource, de: &mut Deframer, seen: &mut Seen, buf_len: usize) {
    let mut buf = vec![0u8; buf_len];
    while let Read::Data(n) = src.read(&mut buf, Duration::ZERO).unwrap() {
        de.feed(&buf[..n], |inc| match inc {
            Incoming::Message(ProbeMsg::Heartbeat(h)) => seen.ticks.push(h.tick),
            Incoming::Message(ProbeMsg::Log(l)) => seen.logs.push(format!("{:?}: {}", l.level, l.text)),
            other => panic!("unexpected {other:?}"),
        });
    }
}

#[test]
fn the_control_block_is_read_at_its_symbol_and_found_by_scanning() {
    let (mut mem, _) = target(64, 97, 32);
    let cb = ControlBlock::read(&mut mem, CB).unwrap().expect("a block at _SEGGER_RTT");
    assert_eq!(cb.describe(), "up 0 \"defmt\", up 1 \"latprobe\", down 0 \"latprobe\"");
    assert_eq!(cb.up_named("latprobe").unwrap().size, 97);
    // A stray copy of the id with nonsense after it (as in a string in
    // RAM) is passed over; the real block is found.
    mem.write(RAM + 0x40, rtt::RTT_ID).unwrap();
    mem.write(RAM + 0x50, &[0xFF; 8]).unwrap();
    let found = ControlBlock::scan(&mut mem, RAM, RAM_LEN as u64).unwrap().expect("found by scanning");
    assert_eq!(found.addr, CB);
    // Nothing there yet (the firmware has not started RTT).
    assert_eq!(ControlBlock::read(&mut mem, RAM + 0x200).unwrap(), None);
}

#[test]
fn recorded_frames_come_through_a_ring_that_wraps_many_times() {
    // 97 bytes: an odd size, so frames straddle the wrap at every offset.
    let (mem, [_, frames, _]) = target(64, 97, 32);
    let cb = ControlBlock::read(&mut mem.clone(), CB).unwrap().unwrap();
    let mut src = RttSource::new(mem.clone(), &cb, "rtt:test", None).unwrap();
    let (mut de, mut seen) = (Deframer::new(), Seen::default());
    let stream: Vec<u8> = recorded(400).concat();
    let mut at = 0;
    let mut step = 1;
    while at < stream.len() {
        // Chunks of 1..=40 bytes, as the DMA task hands them over.
        let n = step.min(stream.len() - at);
        assert!(
            fw_write(&mem, frames, &stream[at..at + n]),
            "a reader that keeps up never makes the writer skip"
        );
        at += n;
        step = step % 40 + 1;
        // Read with a small buffer: frames also split across reads.
        drain(&mut src, &mut de, &mut seen, 13);
    }
    assert_eq!(seen.ticks, (0..400).collect::<Vec<_>>());
    assert_eq!(de.bad_frames(), 0);
    assert!(stream.len() > 97 * 50, "the ring wrapped {} times", stream.len() / 97);
}

#[test]
fn a_reader_that_falls_behind_loses_whole_chunks_never_a_frame_silently() {
    let (mem, [_, frames, _]) = target(64, 97, 32);
    let cb = ControlBlock::read(&mut mem.clone(), CB).unwrap().unwrap();
    let mut src = RttSource::new(mem.clone(), &cb, "rtt:test", None).unwrap().with_max_read(16);
    let (mut de, mut seen) = (Deframer::new(), Seen::default());
    let recorded = recorded(600);
    let stream: Vec<u8> = recorded.concat();
    // Which byte of the stream the writer got into the ring.
    let mut accepted = vec![false; stream.len()];
    let (mut at, mut step, mut skipped) = (0, 7, 0);
    let mut buf = [0u8; 64];
    for round in 0.. {
        if at >= stream.len() {
            break;
        }
        let n = step.min(stream.len() - at);
        if fw_write(&mem, frames, &stream[at..at + n]) {
            accepted[at..at + n].iter_mut().for_each(|a| *a = true);
        } else {
            skipped += 1;
        }
        at += n;
        step = step % 31 + 5;
        // The host reads 16 bytes every third chunk: slower than the writer.
        if round % 3 == 0 {
            if let Read::Data(k) = src.read(&mut buf, Duration::ZERO).unwrap() {
                de.feed(&buf[..k], |inc| {
                    if let Incoming::Message(ProbeMsg::Heartbeat(h)) = inc {
                        seen.ticks.push(h.tick)
                    }
                });
            }
        }
    }
    // Then it catches up.
    drain(&mut src, &mut de, &mut seen, 64);
    assert!(skipped > 50, "the writer should have skipped chunks: {skipped}");
    // Every frame that reached the ring whole is decoded, in order, and
    // nothing else but frames the gaps left intact (a cut may join the
    // same bytes of two frames: then the CRC says the content is intact,
    // and it is). Every frame a skipped chunk cut is otherwise gone, and
    // counted as bad when a piece of it arrived.
    let mut expect = Vec::new();
    let mut touched = Vec::new();
    let mut off = 0;
    for (i, f) in recorded.iter().enumerate() {
        if accepted[off..off + f.len()].iter().all(|&a| a) {
            expect.push(i as u64);
        }
        if accepted[off..off + f.len()].iter().any(|&a| a) {
            touched.push(i as u64);
        }
        off += f.len();
    }
    assert!(seen.ticks.windows(2).all(|w| w[0] < w[1]), "in order: {:?}", seen.ticks);
    assert!(
        expect.iter().all(|t| seen.ticks.contains(t)),
        "an intact frame was lost: {expect:?} vs {:?}",
        seen.ticks
    );
    assert!(seen.ticks.iter().all(|t| touched.contains(t)), "a frame that never arrived was decoded");
    assert!(seen.ticks.len() < 600 && !expect.is_empty());
    assert!(de.bad_frames() > 0, "cut frames are counted");
}

/// A log decoder double: every byte 'W' is a warning.
struct Warns;
impl LogSink for Warns {
    fn feed(&mut self, bytes: &[u8], keep: &mut Vec<(LogLevel, String)>) {
        for _ in bytes.iter().filter(|&&b| b == b'W') {
            keep.push((
                LogLevel::Warn,
                "no start-bit capture of the stimulus byte (wire PA9 to PB10)".into(),
            ));
        }
    }
}

#[test]
fn the_log_channel_is_demultiplexed_and_its_warnings_join_the_frames_at_boundaries() {
    let (mem, [log, frames, _]) = target(64, 97, 32);
    let cb = ControlBlock::read(&mut mem.clone(), CB).unwrap().unwrap();
    let mut src = RttSource::new(mem.clone(), &cb, "rtt:test", Some(Box::new(Warns))).unwrap();
    let (mut de, mut seen) = (Deframer::new(), Seen::default());
    let stream: Vec<u8> = recorded(50).concat();
    for (i, chunk) in stream.chunks(11).enumerate() {
        assert!(fw_write(&mem, frames, chunk));
        // A warning on the log channel now and then, mid-frame.
        if i % 9 == 4 {
            assert!(fw_write(&mem, log, b"..W.."));
        }
        drain(&mut src, &mut de, &mut seen, 5);
    }
    assert_eq!(seen.ticks, (0..50).collect::<Vec<_>>(), "no frame is cut by an injected log line");
    assert_eq!(de.bad_frames(), 0);
    let expected = stream.chunks(11).enumerate().filter(|(i, _)| i % 9 == 4).count();
    assert_eq!(seen.logs.len(), expected);
    assert!(seen.logs[0].starts_with("Warn: no start-bit capture"), "{:?}", seen.logs);
}

#[test]
fn host_bytes_go_down_through_the_wrap_and_stale_frames_are_dropped_on_attach() {
    let (mem, [_, frames, down]) = target(64, 97, 32);
    // An earlier session's frames wait in the ring.
    assert!(fw_write(&mem, frames, &recorded(2).concat()));
    let cb = ControlBlock::read(&mut mem.clone(), CB).unwrap().unwrap();
    let mut src = RttSource::new(mem.clone(), &cb, "rtt:test", None).unwrap();
    let (mut de, mut seen) = (Deframer::new(), Seen::default());
    drain(&mut src, &mut de, &mut seen, 64);
    assert!(seen.ticks.is_empty(), "stale frames must not reach the session: {:?}", seen.ticks);
    // Host bytes: more than the 32-byte ring in total, read by the firmware
    // as it goes; the writes wrap.
    let mut got = Vec::new();
    let msg: Vec<u8> = (0..=255u8).collect();
    for part in msg.chunks(20) {
        src.write_all(part).unwrap();
        got.extend(fw_read(&mem, down));
    }
    assert_eq!(got, msg);
}

#[test]
fn a_corrupt_block_or_a_firmware_without_the_frame_channel_is_named() {
    let (mut mem, [_, frames, _]) = target(64, 97, 32);
    // Another firmware: its channel is called "Terminal".
    mem.write(RAM + 0x100 + 6, b"Terminal\0").unwrap();
    let cb = ControlBlock::read(&mut mem, CB).unwrap().unwrap();
    let e = RttSource::new(mem.clone(), &cb, "rtt:test", None).unwrap_err().to_string();
    assert!(e.contains("no up channel \"latprobe\"") && e.contains("latprobe flash"), "{e}");
    // A write offset past the buffer: the probe reset under us.
    mem.write(RAM + 0x100 + 6, b"latprobe\0").unwrap();
    let cb = ControlBlock::read(&mut mem, CB).unwrap().unwrap();
    let mut src = RttSource::new(mem.clone(), &cb, "rtt:test", None).unwrap();
    mem.write_u32(frames.desc + 12, 5000).unwrap();
    let e = src.read(&mut [0u8; 16], Duration::ZERO).unwrap_err().to_string();
    assert!(e.contains("corrupt") && e.contains("attach again"), "{e}");
}
