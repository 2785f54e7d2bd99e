//! Helpers of the responder's end-to-end tests (`cli.rs`,
//! `faults_cpu_and_line.rs`).

use std::ffi::CStr;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::PathBuf;

/// A new pty: its master and the path of its slave. Opened with
/// `posix_openpt(O_CLOEXEC)` rather than `openpty` because the tests run in
/// parallel threads: a descriptor without close-on-exec from the start can
/// leak into another test's child in the window before `fcntl`, and a
/// leaked master would keep that child's line from ever hanging up.
pub fn open_pty() -> (OwnedFd, PathBuf) {
    // SAFETY: posix_openpt takes flags only and returns a new descriptor or -1.
    let fd = unsafe { libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC) };
    assert!(fd >= 0, "posix_openpt: {}", std::io::Error::last_os_error());
    // SAFETY: `fd` is a fresh descriptor that nothing else owns.
    let master = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: `fd` is an open pty master.
    assert_eq!(unsafe { libc::grantpt(fd) }, 0, "grantpt");
    // SAFETY: as above.
    assert_eq!(unsafe { libc::unlockpt(fd) }, 0, "unlockpt");
    let mut name = [0 as libc::c_char; 128];
    // SAFETY: `name` is valid for writes of its length.
    let rc = unsafe { libc::ptsname_r(fd, name.as_mut_ptr(), name.len()) };
    assert_eq!(rc, 0, "ptsname_r");
    // SAFETY: ptsname_r NUL-terminated the name within the buffer.
    let slave = unsafe { CStr::from_ptr(name.as_ptr()) }.to_str().expect("pts path is UTF-8").into();
    (master, slave)
}
