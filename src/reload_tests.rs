//! Unit tests of `reload`.

use super::*;

#[test]
fn reads_and_opens_are_not_changes() {
    assert!(!changes(&EventKind::Access(AccessKind::Read)));
    assert!(!changes(&EventKind::Access(AccessKind::Close(
        AccessMode::Read
    ))));
    assert!(changes(&EventKind::Access(AccessKind::Close(
        AccessMode::Write
    ))));
    assert!(changes(&EventKind::Any));
}

/// SIGHUP wakes the task at once, with nothing watched and the poll
/// an hour away; shutdown ends it.
#[cfg(unix)]
#[tokio::test]
async fn sighup_wakes_the_reload_and_shutdown_ends_it() {
    use std::sync::Mutex;
    let files = Files {
        what: "test files",
        debounce: Duration::from_millis(50),
        poll: Duration::from_secs(3600),
    };
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    let reload = move |wake| record.lock().unwrap().push(wake);
    // SIGHUP's default action ends the process: listen before sending.
    let _listening = hangup();
    let (stop, shutdown) = watch::channel(false);
    let task = tokio::spawn(run(files, Vec::new, reload, shutdown));
    let pid = std::process::id().to_string();
    let hung_up = async {
        // Again until seen: the task listens once it first runs.
        loop {
            let sent = std::process::Command::new("kill")
                .args(["-HUP", &pid])
                .status();
            assert!(sent.unwrap().success());
            tokio::time::sleep(Duration::from_millis(100)).await;
            if !seen.lock().unwrap().is_empty() {
                break;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(10), hung_up)
        .await
        .unwrap();
    assert!(seen.lock().unwrap().iter().all(|w| *w == Wake::Hangup));
    stop.send(true).unwrap();
    tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .unwrap()
        .unwrap();
}
