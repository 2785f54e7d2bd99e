//! `nucleo-f411re` board: placeholder until the RTIC app lands.
#![no_std]
#![no_main]

use defmt_rtt as _;
use panic_probe as _;
use stm32f4xx_hal as _;

#[cortex_m_rt::entry]
fn main() -> ! {
    defmt::info!("boot: latprobe-firmware on nucleo-f411re (placeholder)");
    loop {
        cortex_m::asm::wfi();
    }
}
