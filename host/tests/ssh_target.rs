//! `--target ssh://…` against a real sshd (Debian's openssh-server, which
//! `scripts/test` installs) on 127.0.0.1 with keys made for the test: the
//! demo's responder started over SSH, its metadata and log fetched back, and
//! the ways it goes wrong: an unreachable host, a refused key, a responder
//! missing there (and `--target-install`), a responder that dies, and the
//! connection dropping mid-run, after which the responder must not live on.
//!
//! Never skipped: without sshd the tests fail and say what to install. They
//! run one at a time (one lock), as they look for the responder by its
//! `--exit-with-stdin` flag among the machine's processes.

mod common;

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::{assert_counts_add_up, ensure_responder, json, latprobe, show};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

const SSHD: &str = "/usr/sbin/sshd";

/// A private sshd on 127.0.0.1, with its host key, a user key it accepts,
/// and an ssh config file that logs in with that key.
struct Sshd {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl Sshd {
    fn start() -> Sshd {
        assert!(
            Path::new(SSHD).is_file(),
            "{SSHD} is missing: install it (sudo apt-get install openssh-server); scripts/test does"
        );
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for key in ["host_key", "user_key", "other_key"] {
            let o = Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(d.join(key))
                .output()
                .expect("ssh-keygen (openssh-client)");
            assert!(o.status.success(), "{}", show(&o));
        }
        std::fs::copy(d.join("user_key.pub"), d.join("authorized_keys")).unwrap();
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let config = format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host_key\nAuthorizedKeysFile {d}/authorized_keys\n\
             PidFile {d}/sshd.pid\nUsePAM no\nStrictModes no\nPasswordAuthentication no\n\
             KbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\nLogLevel ERROR\n",
            d = d.display()
        );
        std::fs::write(d.join("sshd_config"), config).unwrap();
        // sshd's privilege separation directory (as root).
        let _ = std::fs::create_dir_all("/run/sshd");
        let child = Command::new(SSHD)
            .args(["-D", "-e", "-f"])
            .arg(d.join("sshd_config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start sshd");
        let until = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < until, "sshd did not listen on 127.0.0.1:{port} within 10 s");
            std::thread::sleep(Duration::from_millis(50));
        }
        let s = Sshd { child, port, dir };
        s.client_config("ssh_config", "user_key");
        s.client_config("bad_config", "other_key");
        s
    }

    fn client_config(&self, name: &str, key: &str) {
        let user = std::env::var("USER").ok().filter(|u| !u.is_empty()).unwrap_or_else(|| "root".into());
        let text = format!(
            "Host *\n  User {user}\n  IdentityFile {}\n  IdentitiesOnly yes\n  UserKnownHostsFile /dev/null\n  \
             StrictHostKeyChecking no\n  LogLevel ERROR\n",
            self.dir.path().join(key).display()
        );
        std::fs::write(self.dir.path().join(name), text).unwrap();
    }

    fn url(&self) -> String {
        format!("ssh://127.0.0.1:{}", self.port)
    }

    fn config(&self) -> PathBuf {
        self.dir.path().join("ssh_config")
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The demo through `sshd`, with `extra` flags.
fn demo(sshd: &Sshd, extra: &[&str]) -> Command {
    let responder = ensure_responder();
    let mut c = latprobe();
    c.args(["demo", "--target", &sshd.url(), "--ssh-config"]).arg(sshd.config());
    if !extra.contains(&"--target-install") && !extra.contains(&"--target-responder") {
        c.arg("--target-responder").arg(&responder);
    }
    c.args(extra);
    c
}

/// The pids of responders started with `--exit-with-stdin` (over SSH).
fn remote_responders() -> Vec<u32> {
    let o =
        Command::new("pgrep").args(["-f", "--", "latprobe-responder .*--exit-with-stdin"]).output().unwrap();
    String::from_utf8_lossy(&o.stdout).lines().filter_map(|l| l.trim().parse().ok()).collect()
}

fn wait_until(what: &str, limit: Duration, mut ok: impl FnMut() -> bool) {
    let until = Instant::now() + limit;
    while !ok() {
        assert!(Instant::now() < until, "{what} within {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn lock() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner())
}

fn temp_dirs() -> usize {
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .filter(|e| e.as_ref().is_ok_and(|e| e.file_name().to_string_lossy().starts_with("latprobe.")))
        .count()
}

#[test]
fn the_demo_runs_its_responder_over_ssh_and_brings_its_facts_back() {
    let _one = lock();
    let sshd = Sshd::start();
    let out = tempfile::tempdir().unwrap();
    let report = out.path().join("r.json");
    let before = temp_dirs();
    let o = demo(&sshd, &["--duration", "2s", "--interval", "2ms", "-o", report.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let r = json(&report);
    assert_counts_add_up(&r);
    assert!(r["counts"]["responses"].as_u64().unwrap() > 300, "{}", r["counts"]);
    assert_eq!(r["counts"]["timeouts"], 0, "{}", r["counts"]);
    // The responder's own facts, written on the target and fetched back.
    assert_eq!(r["target"]["run"]["mode"], "uart", "{}", r["target"]);
    assert!(r["target"]["uname"]["release"].is_string());
    let notes = r["notes"].to_string();
    assert!(notes.contains(&format!("the responder ran on {} over SSH", sshd.url())), "{notes}");
    assert!(String::from_utf8_lossy(&o.stderr).contains(&format!("on {}", sshd.url())), "{}", show(&o));
    // Nothing is left behind on the target: no responder, no directory.
    wait_until("the remote responder ends", Duration::from_secs(3), || remote_responders().is_empty());
    assert_eq!(temp_dirs(), before, "the run's directory on the target is removed");
}

#[test]
fn a_periodic_demo_over_ssh_fetches_the_targets_own_log() {
    let _one = lock();
    let sshd = Sshd::start();
    let out = tempfile::tempdir().unwrap();
    let report = out.path().join("p.json");
    let log = out.path().join("target.log");
    let o = demo(
        &sshd,
        &[
            "--mode",
            "periodic",
            "--duration",
            "2s",
            "--interval",
            "2ms",
            "-o",
            report.to_str().unwrap(),
            "--target-log",
            log.to_str().unwrap(),
        ],
    )
    .output()
    .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let text = std::fs::read_to_string(&log).expect("the target's log, fetched back");
    assert!(text.starts_with("# latprobe-responder periodic log"), "{text:.200}");
    let rows = text.lines().filter(|l| !l.starts_with('#')).count();
    let r = json(&report);
    let tl = &r["periodic"]["target_log"];
    assert!(tl.is_object(), "the log is set beside the run: {}", r["periodic"]);
    assert!(rows > 500, "{rows} cycles in the log");
    assert_eq!(r["target"]["run"]["mode"], "periodic");
}

#[test]
fn an_unreachable_target_is_exit_2_naming_it() {
    let _one = lock();
    let sshd = Sshd::start();
    let closed = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("ssh://127.0.0.1:{closed}");
    let o = latprobe()
        .args(["demo", "--duration", "1s", "--target", &url, "--ssh-config"])
        .arg(sshd.config())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains(&format!("--target {url}: cannot reach the target")), "{e}");
    assert!(e.contains("sshd runs on it"), "{e}");
    assert_eq!(e.lines().filter(|l| l.starts_with("Error:")).count(), 1, "{e}");
}

#[test]
fn a_refused_key_is_exit_2_saying_how_to_log_in() {
    let _one = lock();
    let sshd = Sshd::start();
    let o = latprobe()
        .args(["demo", "--duration", "1s", "--target", &sshd.url(), "--ssh-config"])
        .arg(sshd.dir.path().join("bad_config"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("the target refused the key") && e.contains("ssh-copy-id"), "{e}");
    assert!(e.contains(&format!("ssh -F {}", sshd.dir.path().join("bad_config").display())), "{e}");
}

#[test]
fn a_responder_missing_on_the_target_names_target_install_which_copies_it() {
    let _one = lock();
    let sshd = Sshd::start();
    let o = demo(&sshd, &["--duration", "1s", "--target-responder", "/nonexistent/latprobe-responder"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("does not run there") && e.contains("--target-install"), "{e}");

    let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
    let installed = Path::new(&home)
        .join(".cache/latprobe")
        .join(format!("latprobe-responder-{}", env!("CARGO_PKG_VERSION")));
    let _ = std::fs::remove_file(&installed);
    let responder = ensure_responder();
    let o =
        demo(&sshd, &["--duration", "1s", "--target-install", "--responder", responder.to_str().unwrap()])
            .output()
            .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("installed"), "{}", show(&o));
    assert_eq!(std::fs::read(&installed).unwrap(), std::fs::read(&responder).unwrap(), "the same binary");
    let _ = std::fs::remove_file(&installed);
}

/// Start a 20 s demo over SSH and wait until its remote responder runs.
fn long_demo(sshd: &Sshd) -> (Child, u32) {
    assert!(remote_responders().is_empty(), "a responder of an earlier test still runs");
    let child =
        demo(sshd, &["--duration", "20s"]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut pid = None;
    wait_until("the remote responder starts", Duration::from_secs(10), || {
        pid = remote_responders().first().copied();
        pid.is_some()
    });
    std::thread::sleep(Duration::from_millis(500));
    (child, pid.unwrap())
}

#[test]
fn a_dropped_connection_ends_the_run_and_the_responder_with_it() {
    let _one = lock();
    let sshd = Sshd::start();
    let (child, responder) = long_demo(&sshd);
    // The ssh client dies as when the network goes: the server sees the
    // connection end and closes the responder's stdin.
    let o = Command::new("pkill").args(["-9", "-P", &child.id().to_string(), "-x", "ssh"]).output().unwrap();
    assert!(o.status.success(), "no ssh under latprobe: {}", show(&o));
    let o = common::wait_with_timeout(&mut { child }, Duration::from_secs(15));
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains(&format!("the responder on {} ended during the run", sshd.url())), "{e}");
    wait_until("the remote responder ends", Duration::from_secs(5), || {
        !Path::new(&format!("/proc/{responder}")).exists()
    });
}

#[test]
fn a_responder_dying_on_the_target_fails_the_run_saying_so() {
    let _one = lock();
    let sshd = Sshd::start();
    let (child, responder) = long_demo(&sshd);
    // SAFETY: kill(2) on a pid just read from /proc; at worst it is gone.
    unsafe { libc::kill(responder as i32, libc::SIGKILL) };
    let o = common::wait_with_timeout(&mut { child }, Duration::from_secs(15));
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains(&format!("the responder on {} ended during the run", sshd.url())), "{e}");
}
