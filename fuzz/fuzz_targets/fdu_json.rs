//! The reader of `fdu --from-json`, and the JSON event reader under it:
//! whatever the bytes, an error or a result, never a panic. A tree read is
//! written back by `--json`'s writer and reads again as the same tree; a
//! document the event reader accepts, written back event by event, reads
//! as the same events. Run with `cargo +nightly fuzz run fdu_json`.
#![no_main]

use libfuzzer_sys::fuzz_target;

use fdu::json_stream::{Reader, Writer};
use fdu::settings::Measure;

fuzz_target!(|data: &[u8]| {
    if let Ok(roots) = fdu::json::read(data) {
        let mut out = Vec::new();
        fdu::json::write(&roots, Measure::Disk, &mut out);
        let again = fdu::json::read(&out).expect("what --json writes reads back");
        assert!(again == roots, "a tree changed on its way through --json");
    }
    let mut events = Vec::new();
    let mut reader = Reader::new(data);
    loop {
        match reader.next() {
            Ok(Some(event)) => events.push(event),
            Ok(None) => break,
            Err(_) => return,
        }
    }
    let mut out = Vec::new();
    let mut writer = Writer::new(&mut out);
    events.iter().for_each(|e| writer.event(e));
    let mut reader = Reader::new(&out);
    for event in &events {
        assert_eq!(
            reader.next().as_ref(),
            Ok(&Some(event.clone())),
            "events changed when written back"
        );
    }
    assert_eq!(reader.next(), Ok(None));
});
