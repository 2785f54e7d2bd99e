//! latprobe: the host CLI.
fn main() {
    eprintln!("latprobe: the host CLI is not built yet (issue 3): `run`, `report` and `demo` are coming");
    std::process::exit(2);
}
