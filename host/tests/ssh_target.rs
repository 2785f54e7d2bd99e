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
        Sshd::start_with("")
    }

    /// [`Sshd::start`] with `extra` lines in sshd's config.
    fn start_with(extra: &str) -> Sshd {
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
             KbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\nLogLevel ERROR\n{extra}",
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
        // This process's user, as sshd knows it (not $USER, which may lie).
        let (user, _) = passwd_entry();
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

/// The responders this test's `sshd` started: processes named
/// latprobe-responder below it (not the ssh client, whose command line names
/// them too, nor another suite's, run beside this one).
fn remote_responders(sshd: &Sshd) -> Vec<u32> {
    below_sshd(sshd, "latprobe-respon")
}

/// The processes named `name` (comm: cut to 15 bytes) below this test's sshd.
fn below_sshd(sshd: &Sshd, name: &str) -> Vec<u32> {
    let stat = |pid: u32| -> Option<(String, u32)> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let (l, r) = (text.find('(')?, text.rfind(')')?);
        let ppid = text[r + 2..].split_whitespace().nth(1)?.parse().ok()?;
        Some((text[l + 1..r].to_string(), ppid))
    };
    let below = |mut pid: u32| {
        for _ in 0..32 {
            match stat(pid) {
                Some((_, ppid)) if ppid == sshd.child.id() => return true,
                Some((_, ppid)) if ppid > 1 => pid = ppid,
                _ => return false,
            }
        }
        false
    };
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| stat(pid).is_some_and(|(comm, _)| comm == name) && below(pid))
        .collect()
}

fn wait_until(what: &str, limit: Duration, mut ok: impl FnMut() -> bool) {
    let until = Instant::now() + limit;
    while !ok() {
        assert!(Instant::now() < until, "{what} within {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// This process's user name and home as /etc/passwd gives them (what sshd
/// logs in as and with, whatever $USER and $HOME say).
fn passwd_entry() -> (String, String) {
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() }.to_string();
    std::fs::read_to_string("/etc/passwd")
        .unwrap()
        .lines()
        .map(|l| l.split(':').map(str::to_string).collect::<Vec<_>>())
        .find(|f| f.len() > 5 && f[2] == uid)
        .map(|f| (f[0].clone(), f[5].clone()))
        .expect("this user in /etc/passwd")
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
    // The responder over SSH answered (how well depends on the machine's load).
    assert!(r["counts"]["responses"].as_u64().unwrap() > 50, "{}", r["counts"]);
    // The responder's own facts, written on the target and fetched back.
    assert_eq!(r["target"]["run"]["mode"], "uart", "{}", r["target"]);
    assert!(r["target"]["uname"]["release"].is_string());
    let notes = r["notes"].to_string();
    assert!(notes.contains(&format!("the responder ran on {} over SSH", sshd.url())), "{notes}");
    assert!(String::from_utf8_lossy(&o.stderr).contains(&format!("on {}", sshd.url())), "{}", show(&o));
    // Nothing is left behind on the target: no responder, no directory.
    wait_until("the remote responder ends", Duration::from_secs(3), || remote_responders(&sshd).is_empty());
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

/// issue 43 (6): `--target ssh://-oProxyCommand=…` reached ssh as an
/// option (only OpenSSH's own host name check stopped it) and the error
/// then suggested running it by hand. Refused before ssh runs, naming why.
#[test]
fn a_host_that_looks_like_an_option_is_refused_before_ssh_runs() {
    let _one = lock();
    let sshd = Sshd::start();
    let dir = tempfile::tempdir().unwrap();
    // A host may hold no '/': the injected command makes `ran` where it runs.
    let marker = dir.path().join("ran");
    for url in
        ["ssh://-oProxyCommand=touch${IFS}ran".to_string(), format!("ssh://-lroot@127.0.0.1:{}", sshd.port)]
    {
        let o = latprobe()
            .current_dir(dir.path())
            .args(["demo", "--duration", "1s", "--target", &url, "--ssh-config"])
            .arg(sshd.config())
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{}", show(&o));
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(e.contains("cannot begin with '-'"), "{e}");
        assert!(!e.contains("by hand"), "no command to copy: {e}");
        assert!(!marker.exists(), "the injected command ran");
    }
}

/// issue 43: a login that prints a banner (a shell startup file's echo)
/// made latprobe read the banner as the target's CPU and the CPU as the
/// responder's version ("responder there is `x86_64`"). What is read back
/// is framed; the banner is ignored. (sshd's ForceCommand prints it before
/// every remote command.)
#[test]
fn a_login_banner_is_not_taken_for_the_targets_answers() {
    let _one = lock();
    // What a login shell's startup file would print, before every command.
    let sshd = Sshd::start_with(
        "ForceCommand echo 'Welcome to the board under test'; echo; eval \"$SSH_ORIGINAL_COMMAND\"\n",
    );
    let config = sshd.config();
    // The banner does come out on a plain remote command.
    let o = Command::new("ssh")
        .arg("-F")
        .arg(&config)
        .args(["-p", &sshd.port.to_string(), "127.0.0.1", "true"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&o.stdout).contains("Welcome"), "{}", show(&o));
    let out = tempfile::tempdir().unwrap();
    let report = out.path().join("r.json");
    let responder = ensure_responder();
    let o = latprobe()
        .args(["demo", "--duration", "1s", "--target", &sshd.url(), "--ssh-config"])
        .arg(&config)
        .arg("--target-responder")
        .arg(&responder)
        .args(["-o", report.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    // The responder's metadata, fetched back, is its JSON (no banner before it).
    assert_eq!(json(&report)["target"]["run"]["mode"], "uart");
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

    // sshd logs in with the passwd entry's home, whatever $HOME says here.
    let (_, home) = passwd_entry();
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

/// A 20 s demo over SSH, under way: latprobe has seen its remote
/// responder ready (it said so on stderr), and the responder's pid.
struct LongDemo {
    child: Child,
    stderr: std::sync::Arc<Mutex<String>>,
    reader: Option<std::thread::JoinHandle<()>>,
    responder: u32,
}

fn long_demo(sshd: &Sshd) -> LongDemo {
    use std::io::BufRead as _;
    assert!(remote_responders(sshd).is_empty(), "a responder of an earlier test still runs");
    let mut child =
        demo(sshd, &["--duration", "20s"]).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let stderr = std::sync::Arc::new(Mutex::new(String::new()));
    let (tx, rx) = std::sync::mpsc::channel();
    let pipe = child.stderr.take().unwrap();
    let sink = stderr.clone();
    let reader = std::thread::spawn(move || {
        for line in std::io::BufReader::new(pipe).lines().map_while(Result::ok) {
            // Said once the responder over there is ready and the run starts.
            if line.starts_with("latprobe demo: uart-echo") {
                let _ = tx.send(());
            }
            let mut s = sink.lock().unwrap();
            s.push_str(&line);
            s.push('\n');
        }
    });
    if rx.recv_timeout(Duration::from_secs(20)).is_err() {
        let _ = child.kill();
        panic!("the demo did not start within 20 s: {}", stderr.lock().unwrap());
    }
    let responder = remote_responders(sshd);
    assert_eq!(responder.len(), 1, "one responder over SSH: {responder:?}");
    std::thread::sleep(Duration::from_millis(300));
    LongDemo { child, stderr, reader: Some(reader), responder: responder[0] }
}

impl LongDemo {
    /// Its exit code and stderr, within 15 s.
    fn end(mut self) -> (Option<i32>, String) {
        let until = Instant::now() + Duration::from_secs(15);
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            if Instant::now() > until {
                let _ = self.child.kill();
                panic!("the demo did not end within 15 s: {}", self.stderr.lock().unwrap());
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let _ = self.reader.take().unwrap().join();
        let text = self.stderr.lock().unwrap().clone();
        (status.code(), text)
    }
}

#[test]
fn a_dropped_connection_ends_the_run_and_the_responder_with_it() {
    let _one = lock();
    let sshd = Sshd::start();
    let d = long_demo(&sshd);
    let responder = d.responder;
    // The ssh client dies as when the network goes: the server sees the
    // connection end and closes the responder's stdin.
    let o =
        Command::new("pkill").args(["-9", "-P", &d.child.id().to_string(), "-x", "ssh"]).output().unwrap();
    assert!(o.status.success(), "no ssh under latprobe: {}", show(&o));
    let (code, e) = d.end();
    assert_eq!(code, Some(1), "{e}");
    assert!(e.contains(&format!("the responder on {} ended during the run", sshd.url())), "{e}");
    wait_until("the remote responder ends", Duration::from_secs(5), || {
        !Path::new(&format!("/proc/{responder}")).exists()
    });
}

/// issue 43 (8): a `kill -9` of latprobe left the run's directory on the
/// target (up to megabytes of trace snapshots). The next run on that target
/// from this machine removes it, saying so; a live run's is never touched.
#[test]
fn a_killed_runs_directory_on_the_target_is_removed_by_the_next_run() {
    let _one = lock();
    let sshd = Sshd::start();
    let before = temp_dirs();
    let d = long_demo(&sshd);
    let pid = d.child.id();
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    let (code, _) = d.end();
    assert_eq!(code, None, "killed");
    wait_until("the remote responder ends", Duration::from_secs(5), || remote_responders(&sshd).is_empty());
    assert_eq!(temp_dirs(), before + 1, "the killed run's directory is left");
    let o = demo(&sshd, &["--duration", "1s"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains(&format!("left by a latprobe run (pid {pid})")) && e.contains(&sshd.url()), "{e}");
    assert_eq!(temp_dirs(), before, "{e}");
}

#[test]
fn a_responder_dying_on_the_target_fails_the_run_saying_so() {
    let _one = lock();
    let sshd = Sshd::start();
    let d = long_demo(&sshd);
    // SAFETY: kill(2) on a pid just read from /proc; at worst it is gone.
    unsafe { libc::kill(d.responder as i32, libc::SIGKILL) };
    let (code, e) = d.end();
    assert_eq!(code, Some(1), "{e}");
    assert!(e.contains(&format!("the responder on {} ended during the run", sshd.url())), "{e}");
}

/// A pseudo-terminal standing for the target's serial line: the master,
/// held for the test, and the slave's path for `--target-device`.
fn target_tty() -> (std::fs::File, String) {
    use std::os::fd::FromRawFd;
    let (mut m, mut s) = (-1, -1);
    let mut name = [0 as libc::c_char; 128];
    // SAFETY: openpty writes two fds and the NUL-terminated slave name into
    // a buffer of 128 bytes (it needs ~20).
    let rc = unsafe { libc::openpty(&mut m, &mut s, name.as_mut_ptr(), std::ptr::null(), std::ptr::null()) };
    assert_eq!(rc, 0, "openpty");
    // SAFETY: fresh fds from openpty; the slave is closed (the responder
    // opens it by name), the master owned by the File; the name is NUL-terminated.
    unsafe {
        libc::close(s);
        (
            std::fs::File::from_raw_fd(m),
            std::ffi::CStr::from_ptr(name.as_ptr()).to_string_lossy().into_owned(),
        )
    }
}

/// `run --target`: the responder is started on the target for the run, on
/// the line given, its facts become the report's `target`, and it is gone
/// afterwards, its directory too.
#[test]
fn run_starts_the_responder_on_the_target_for_the_run_and_stops_it() {
    let _one = lock();
    let sshd = Sshd::start();
    let (_master, tty) = target_tty();
    let dir = tempfile::tempdir().unwrap();
    let probe = common::FakeProbe::start(dir.path(), common::FakeOpts::default());
    let report = dir.path().join("r.json");
    let responder = ensure_responder();
    let before = temp_dirs();
    let config = sshd.config();
    let o = probe.run(&[
        "--count",
        "300",
        "--target",
        &sshd.url(),
        "--ssh-config",
        config.to_str().unwrap(),
        "--target-responder",
        responder.to_str().unwrap(),
        "--target-device",
        &tty,
        "--target-baud",
        "230400",
        "--load",
        "dd",
        "-o",
        report.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let r = json(&report);
    assert_eq!(r["target"]["run"]["mode"], "uart", "{}", r["target"]);
    assert_eq!(r["target"]["run"]["device"], tty.as_str(), "{}", r["target"]);
    assert_eq!(r["target"]["run"]["baud"], 230400, "{}", r["target"]);
    assert!(r["notes"].to_string().contains("over SSH"), "{}", r["notes"]);
    // The load ran there, and ended with the run.
    assert_eq!(r["loads"][0]["name"], "dd", "{}", r["loads"]);
    assert_eq!(r["loads"][0]["on"], sshd.url().as_str());
    wait_until("the remote responder ends", Duration::from_secs(3), || remote_responders(&sshd).is_empty());
    wait_until("the load ends", Duration::from_secs(5), || {
        below_sshd(&sshd, "dd").is_empty() && below_sshd(&sshd, "sh").is_empty()
    });
    assert_eq!(temp_dirs(), before, "the run's directory on the target is removed");
}

/// `run --target` names the line it lacks before anything is started.
#[test]
fn run_target_without_the_line_names_the_flag_it_needs() {
    let cases: [(&[&str], &str); 4] = [
        (&[], "needs --target-device PATH"),
        (&["--mode", "gpio-echo"], "needs --target-gpio CHIP:INPUT:OUTPUT"),
        (&["--mode", "gpio-echo", "--target-gpio", "/dev/gpiochip0:17"], "write CHIP:INPUT:OUTPUT"),
        (&["--mode", "loopback", "--line", "gpio"], "drop --target"),
    ];
    for (extra, want) in cases {
        let o = latprobe()
            .args(["run", "--port", "/dev/null", "--target", "ssh://127.0.0.1:1"])
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {}", show(&o));
        assert!(String::from_utf8_lossy(&o.stderr).contains(want), "{extra:?}: {}", show(&o));
    }
    let o =
        latprobe().args(["run", "--port", "/dev/null", "--target-device", "/dev/ttyS1"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "--target-device alone: {}", show(&o));
}

/// Whether tracefs is there, mounted now if need be (as root); if not, the
/// test says why it skips.
fn tracefs_here() -> bool {
    let on = || Path::new("/sys/kernel/tracing/tracing_on").exists();
    if !on() {
        let _ = Command::new("mount").args(["-t", "tracefs", "nodev", "/sys/kernel/tracing"]).output();
    }
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !(root && on()) {
        eprintln!("skipped: tracefs is not mounted at /sys/kernel/tracing and could not be (root needed)");
    }
    root && on()
}

/// What the responder's `--trace` changes in tracefs, to compare before and
/// after a run (the machine's own state, whatever an earlier run left).
fn tracefs_state() -> Vec<String> {
    let t = Path::new("/sys/kernel/tracing");
    let mut files: Vec<String> = [
        "sched/sched_switch",
        "sched/sched_wakeup",
        "irq/irq_handler_entry",
        "irq/irq_handler_exit",
        "irq/softirq_entry",
        "irq/softirq_exit",
        "timer/hrtimer_expire_entry",
        "timer/hrtimer_expire_exit",
    ]
    .iter()
    .map(|e| format!("events/{e}/enable"))
    .collect();
    files.extend(["tracing_on", "trace_clock", "buffer_size_kb", "current_tracer"].map(String::from));
    files
        .iter()
        .map(|f| format!("{f}={}", std::fs::read_to_string(t.join(f)).unwrap_or_default().trim()))
        .collect()
}

/// `demo --trace` over SSH: the responder writes its snapshots in the run's
/// directory on the target, and they come back beside the report. The
/// demo's target is this machine, so the trigger FIFO is shared; this test
/// writes the trigger byte as the virtual probe will.
#[test]
fn a_traced_demo_over_ssh_brings_its_snapshots_back_beside_the_report() {
    let _one = lock();
    if !tracefs_here() {
        return;
    }
    let tracefs_before = tracefs_state();
    let sshd = Sshd::start();
    let out = tempfile::tempdir().unwrap();
    let report = out.path().join("t.json");
    let mut child = demo(&sshd, &["--duration", "3s", "--trace", "-o", report.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let fifo = loop {
        let line = rx.recv_timeout(Duration::from_secs(20)).expect("the demo names its FIFO");
        if let Some((_, rest)) = line.split_once("trigger FIFO ") {
            break rest.split_once(' ').map_or(rest, |p| p.0).to_string();
        }
    };
    // Once the measurement is under way (answers are being marked).
    while !rx
        .recv_timeout(Duration::from_secs(20))
        .expect("the demo starts")
        .contains("latprobe demo: uart-echo")
    {}
    std::thread::sleep(Duration::from_millis(1000));
    std::io::Write::write_all(&mut std::fs::OpenOptions::new().write(true).open(&fifo).unwrap(), b"T")
        .unwrap();
    let status = child.wait().unwrap();
    let rest: Vec<String> = rx.try_iter().collect();
    assert!(status.success(), "{rest:?}");
    let r = json(&report);
    let t = &r["trace"];
    assert_eq!(t["triggers"], 1, "{t}");
    let file = t["snapshots"][0]["file"].as_str().unwrap();
    let saved = std::fs::read_to_string(out.path().join("t-trace").join(file)).unwrap();
    assert!(saved.contains("tracing_mark_write: latprobe seq="));
    assert!(t["snapshots"][0]["stop_latency_ns"].as_u64().unwrap() > 0);
    wait_until("the remote responder ends", Duration::from_secs(3), || remote_responders(&sshd).is_empty());
    assert_eq!(tracefs_state(), tracefs_before, "tracefs restored");
}

/// `run --trace` on a board with no trigger wire (`--trace-stop host`, the
/// default without --target-trigger-gpio): the FIFO is made on the target,
/// the responder there arms its ftrace and reads the FIFO, latprobe writes
/// a `T` into it over SSH for every sample the probe flagged, and the
/// snapshots come back beside the report, the first tied to the first
/// flagged sample. The probe is the fake, which flags by the trigger's rule
/// (its 400 µs samples and its timeouts are above 300 µs).
#[test]
fn run_trace_over_ssh_stops_the_trace_from_the_host_and_brings_the_snapshots_back() {
    let _one = lock();
    if !tracefs_here() {
        return;
    }
    let tracefs_before = tracefs_state();
    let sshd = Sshd::start();
    let (_master, tty) = target_tty();
    let dir = tempfile::tempdir().unwrap();
    let opts = common::FakeOpts {
        hello: || latprobe_protocol::ProbeInfo {
            capabilities: common::hello_info().capabilities | latprobe_protocol::Capabilities::TRIGGER,
            ..common::hello_info()
        },
        pace: Duration::from_millis(20),
        ..common::FakeOpts::default()
    };
    let probe = common::FakeProbe::start(dir.path(), opts);
    let report = dir.path().join("r.json");
    let responder = ensure_responder();
    let before = temp_dirs();
    let config = sshd.config();
    let o = probe.run(&[
        "--count",
        "300",
        "--trigger-above",
        "300us",
        "--target",
        &sshd.url(),
        "--ssh-config",
        config.to_str().unwrap(),
        "--target-responder",
        responder.to_str().unwrap(),
        "--target-device",
        &tty,
        "--trace",
        "--trace-keep",
        "2",
        "-o",
        report.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("stopped by latprobe when a flagged sample arrives"), "{err}");
    let r = json(&report);
    let flagged: Vec<u64> =
        r["counts"]["triggered_seqs"].as_array().unwrap().iter().map(|s| s.as_u64().unwrap()).collect();
    assert_eq!(flagged, [96, 193, 250, 290], "the fake's timeouts and its 400 us sample");
    let t = &r["trace"];
    assert_eq!(t["stop"], "host", "{t:#}");
    assert!(t["triggers"].as_u64().unwrap() >= 1, "the responder saw the host's stop: {t:#}");
    let snaps = t["snapshots"].as_array().unwrap();
    assert!(!snaps.is_empty() && snaps.len() <= 2, "--trace-keep 2: {t:#}");
    assert_eq!(snaps[0]["trigger"], 1);
    assert_eq!(snaps[0]["sample_seq"], 96, "tied to the first flagged sample: {:#}", snaps[0]);
    let file = snaps[0]["file"].as_str().unwrap();
    assert!(dir.path().join("r-trace").join(file).is_file(), "fetched beside the report");
    // One stop per flagged sample here (each came in its own batch, 20 ms
    // apart), each stop's sample recorded for the tie.
    let stops = std::fs::read_to_string(dir.path().join("r-trace/host-stops.txt")).unwrap();
    assert_eq!(stops, "96\n193\n250\n290\n");
    assert_eq!(t["host_stops"], 4);
    wait_until("the remote responder ends", Duration::from_secs(3), || remote_responders(&sshd).is_empty());
    wait_until("the stop's cat ends", Duration::from_secs(3), || below_sshd(&sshd, "cat").is_empty());
    assert_eq!(temp_dirs(), before, "the run's directory on the target is removed");
    assert_eq!(tracefs_state(), tracefs_before, "tracefs restored");
}

/// `run --trace` refusals, each naming its fix, before anything starts.
#[test]
fn run_trace_without_what_it_needs_names_the_flag() {
    let cases: [(&[&str], &str); 3] = [
        (&["--trace", "--trigger-above", "1ms"], "give --target"),
        (
            &["--trace", "--target", "ssh://127.0.0.1:1", "--target-device", "/dev/null"],
            "needs --trigger-above",
        ),
        (&["--target-trigger-gpio", "/dev/gpiochip0:3"], "--trace"),
    ];
    for (extra, want) in cases {
        let o = latprobe().args(["run", "--port", "/dev/null"]).args(extra).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {}", show(&o));
        assert!(String::from_utf8_lossy(&o.stderr).contains(want), "{extra:?}: {}", show(&o));
    }
}

/// issue 43 (13): the SSH session carrying a load drops mid-run. Today the
/// run went on without it, exit 0, its report saying the load ran. Now the
/// run fails, saying the load's session dropped, and the load's processes
/// on the target end (sshd closes their stdin).
#[test]
fn a_loads_dropped_ssh_session_fails_the_run() {
    let _one = lock();
    let sshd = Sshd::start();
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("l.json");
    let mut child =
        demo(&sshd, &["--duration", "30s", "--load", "hackbench:2", "-o", report.to_str().unwrap()])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
    wait_until("hackbench runs over SSH", Duration::from_secs(20), || {
        !below_sshd(&sshd, "hackbench").is_empty()
    });
    std::thread::sleep(Duration::from_millis(2_500));
    // The ssh client carrying the load (its command is the load's shell).
    let carrier: Vec<u32> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            comm.trim() == "ssh" && String::from_utf8_lossy(&cmd).contains("setsid sh -c")
        })
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let ppid =
                stat.rfind(')').and_then(|r| stat[r + 2..].split_whitespace().nth(1)?.parse::<u32>().ok());
            ppid == Some(child.id())
        })
        .collect();
    assert_eq!(carrier.len(), 1, "one ssh carrying the load: {carrier:?}");
    // SAFETY: kill(2) on the ssh client our child started.
    unsafe { libc::kill(carrier[0] as libc::pid_t, libc::SIGKILL) };
    let o = common::wait_with_timeout(&mut child, Duration::from_secs(20));
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(
        e.contains(&format!("the load hackbench:2 on {} stopped", sshd.url()))
            && e.contains("the SSH session carrying it dropped"),
        "{e}"
    );
    assert!(json(&report)["loads"][0]["ran"][0]["ended"].as_str().unwrap().contains("dropped"));
    wait_until("the load ends on the target", Duration::from_secs(10), || {
        below_sshd(&sshd, "hackbench").is_empty()
    });
}
