//! The responder's command line: its subcommands and the option groups they share.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::{duration, gpio};

#[derive(Debug, Parser)]
#[command(
    name = "latprobe-responder",
    version,
    about = "The target-side half of latprobe: answers the probe's stimulus on the Linux board under test",
    long_about = "The target-side half of latprobe.\n\n\
        Runs on the Linux board under test. A latprobe probe (a Cortex-M board) sends \
        stimuli and timestamps the answers with its own timer, so every latency figure \
        comes from the probe's clock, not this board's. This program gives the answers: \
        it echoes bytes on a serial line (uart), toggles a GPIO output on every edge of a \
        GPIO input (gpio-echo), or marks every period on its own timer with a byte on a \
        serial line or a toggle of a GPIO line (periodic), at SCHED_FIFO priority with memory locked and \
        /dev/cpu_dma_latency held at 0. What the board refuses becomes a warning, and \
        --metadata records what was achieved, with the kernel facts that matter."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Cmd,
}

#[derive(Debug, Subcommand)]
pub enum Cmd {
    /// Echo every byte received on a serial line straight back (uart-echo mode)
    Uart {
        #[command(flatten)]
        line: LineArgs,
        #[command(flatten)]
        rt: RtArgs,
        #[command(flatten)]
        trace: crate::trace::TraceArgs,
    },
    /// Mark every period, timed by this board: a byte on a serial line or a toggle of a GPIO line (periodic mode), logging each cycle's own wake-up latency
    // One marker line, named either way: without one the error names both
    // --device and --gpio.
    #[command(group = clap::ArgGroup::new("marker").required(true).args(["device", "gpio"]))]
    Periodic {
        /// The serial line to write a byte on each period, e.g. /dev/ttyS1 (or --gpio)
        #[arg(long, value_name = "PATH")]
        device: Option<PathBuf>,
        /// Line speed in baud (8N1, no flow control)
        #[arg(long, value_name = "N", default_value_t = 115_200)]
        baud: u32,
        /// Toggle this GPIO line each period instead of writing a byte: CHIP:LINE, e.g. /dev/gpiochip0:17
        #[arg(long, value_name = "CHIP:LINE", value_parser = gpio::parse_line_spec)]
        gpio: Option<gpio::LineSpec>,
        /// Time between marks, with a unit: 250ns, 500us, 1ms, 2s
        #[arg(long, visible_alias = "period", value_name = "DURATION", value_parser = duration::parse_duration)]
        interval: Duration,
        /// The byte to write, hex (0x55) or decimal (85)
        #[arg(long, value_name = "BYTE", default_value = "0x55", value_parser = parse_byte)]
        byte: u8,
        /// Log every cycle's own wake-up latency (what cyclictest would report) to FILE, one `cycle latency_ns` line each
        #[arg(long, value_name = "FILE")]
        log: Option<PathBuf>,
        /// Stop the log at BYTES (a last `# capped` line says from which cycle on); the marks go on
        #[arg(long, value_name = "BYTES", default_value_t = crate::cycles::DEFAULT_LOG_MAX, requires = "log")]
        log_max: u64,
        #[command(flatten)]
        rt: RtArgs,
        #[command(flatten)]
        trace: crate::trace::TraceArgs,
    },
    /// Toggle a GPIO output at once on every edge of a GPIO input (gpio-echo mode), logging the kernel's timestamp of each edge
    GpioEcho {
        /// The GPIO chip, e.g. /dev/gpiochip0 (or gpiochip0)
        #[arg(long, value_name = "CHIP")]
        chip: String,
        /// The input line's offset (wired from the probe's stimulus)
        #[arg(long, value_name = "L")]
        input: u32,
        /// The output line's offset (wired to the probe's capture input)
        #[arg(long, value_name = "L")]
        output: u32,
        /// Which input edges to answer
        #[arg(long, value_enum, default_value = "both")]
        edge: EdgeArg,
        /// Log every edge as `event kernel_ns answered_ns` to FILE
        #[arg(long, value_name = "FILE")]
        log: Option<PathBuf>,
        #[command(flatten)]
        rt: RtArgs,
        #[command(flatten)]
        trace: crate::trace::TraceArgs,
    },
    /// Print this board's facts (kernel, preemption, boot parameters...) as JSON
    Metadata {
        /// Write to FILE instead of stdout
        #[arg(long, short, value_name = "FILE")]
        output: Option<PathBuf>,
    },
}

/// Input edges gpio-echo answers.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum EdgeArg {
    Rising,
    Falling,
    Both,
}

#[derive(Debug, Args)]
pub struct LineArgs {
    /// The serial line to the probe, e.g. /dev/ttyS1 or /dev/ttyUSB0
    #[arg(long, value_name = "PATH")]
    pub device: PathBuf,
    /// Line speed in baud (8N1, no flow control)
    #[arg(long, value_name = "N", default_value_t = 115_200)]
    pub baud: u32,
}

#[derive(Debug, Args)]
pub struct RtArgs {
    /// Run as SCHED_FIFO at this priority (1-99); a warning if not permitted
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u8).range(1..=99))]
    pub priority: Option<u8>,
    /// Pin to this CPU; a warning if not permitted
    #[arg(long, value_name = "N")]
    pub cpu: Option<usize>,
    /// Write the board's facts and the RT settings achieved as JSON to FILE ("-" for stdout) at start
    #[arg(long, value_name = "FILE")]
    pub metadata: Option<PathBuf>,
    /// Stop (as on SIGTERM) when stdin closes: started over ssh, the responder then ends with the session
    #[arg(long)]
    pub exit_with_stdin: bool,
}

pub fn parse_byte(text: &str) -> Result<u8, String> {
    let text = text.trim();
    let parsed = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u8::from_str_radix(hex, 16),
        None => text.parse(),
    };
    parsed.map_err(|_| format!("'{text}' is not a byte (write 0x00-0xff or 0-255)"))
}
