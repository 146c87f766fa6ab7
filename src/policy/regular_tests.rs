//! Unit tests of `regular`.

use super::*;

#[test]
fn regular_files_are_read_up_to_the_bound() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.yaml");
    std::fs::write(&path, "0123456789").unwrap();
    assert_eq!(read(&path, 100).unwrap(), b"0123456789");
    assert_eq!(read(&path, 4).unwrap(), b"01234");
    let link = dir.path().join("b.yaml");
    std::os::unix::fs::symlink(&path, &link).unwrap();
    assert_eq!(read(&link, 100).unwrap(), b"0123456789");
}

#[test]
fn fifos_sockets_and_devices_are_refused_unopened() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("p.yaml");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    let link = dir.path().join("link.yaml");
    std::os::unix::fs::symlink(&fifo, &link).unwrap();
    let socket = dir.path().join("s.yaml");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    for (path, what) in [
        (fifo.as_path(), "named pipe"),
        (link.as_path(), "named pipe"),
        (socket.as_path(), "socket"),
        (Path::new("/dev/null"), "character device"),
    ] {
        let e = read(path, 100).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{path:?}");
        assert!(e.to_string().contains(what), "{path:?}: {e}");
    }
}
