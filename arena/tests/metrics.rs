//! `/metrics` scraped over real HTTP on 127.0.0.1 parses as Prometheus text
//! and carries the values the server recorded.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use arena::http::{MetricsServer, MAX_REQUEST};
use arena::metrics::{ServerMetrics, Totals};
use netchan::DropReason;
use prometheus_parse::{Scrape, Value};

fn get(addr: SocketAddr, request: &[u8]) -> (String, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream.write_all(request).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    (head.to_owned(), body.to_owned())
}

fn value(scrape: &Scrape, name: &str, label: Option<(&str, &str)>) -> Value {
    scrape
        .samples
        .iter()
        .find(|s| s.metric == name && label.is_none_or(|(k, v)| s.labels.get(k) == Some(v)))
        .unwrap_or_else(|| panic!("no sample {name} {label:?}"))
        .value
        .clone()
}

/// A counter's value. OpenMetrics names a counter's sample `<family>_total`
/// while the parser, written for the Prometheus 0.0.4 text format, looks
/// its type up by the sample name and so reports it untyped; the family's
/// type line is checked separately.
fn counter(scrape: &Scrape, name: &str, label: Option<(&str, &str)>) -> f64 {
    match value(scrape, name, label) {
        Value::Counter(v) | Value::Untyped(v) => v,
        other => panic!("{name} is {other:?}"),
    }
}

#[test]
fn scrape_parses_as_prometheus_text() {
    let mut metrics = ServerMetrics::new();
    for ms in [1u64, 2, 3] {
        metrics.frame(Duration::from_micros(ms * 100));
    }
    metrics.snapshot(40, true);
    metrics.snapshot(120, false);
    metrics.snapshot(90, false);
    metrics.set_clients(3);
    metrics.set_reliable_queue(7, 4);
    metrics.timeout();
    let mut totals = Totals {
        bytes_sent: 12_345,
        bytes_received: 678,
        ..Totals::default()
    };
    totals.set_rejected(DropReason::RateLimited, 9);
    metrics.update_totals(totals);

    let server = MetricsServer::spawn("127.0.0.1:0".parse().unwrap(), metrics.registry()).unwrap();
    let (head, body) = get(
        server.local_addr(),
        b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n",
    );
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    assert!(head.contains("Content-Length: "), "{head}");

    let scrape = Scrape::parse(body.lines().map(|l| Ok(l.to_owned()))).unwrap();
    for family in [
        "arena_frames",
        "arena_bytes_sent",
        "arena_bytes_received",
        "arena_snapshots",
        "arena_timeouts",
        "arena_rejected_datagrams",
    ] {
        assert!(
            body.contains(&format!("# TYPE {family} counter\n")),
            "{family}: {body}"
        );
    }
    assert!(body.ends_with("# EOF\n"));
    assert_eq!(
        value(&scrape, "arena_connected_clients", None),
        Value::Gauge(3.0)
    );
    assert_eq!(
        value(&scrape, "arena_reliable_queue_messages", None),
        Value::Gauge(7.0)
    );
    assert_eq!(
        value(&scrape, "arena_reliable_queue_max", None),
        Value::Gauge(4.0)
    );
    assert_eq!(counter(&scrape, "arena_frames_total", None), 3.0);
    assert_eq!(counter(&scrape, "arena_bytes_sent_total", None), 12_345.0);
    assert_eq!(counter(&scrape, "arena_bytes_received_total", None), 678.0);
    let kind = |k| Some(("kind", k));
    assert_eq!(counter(&scrape, "arena_snapshots_total", kind("full")), 1.0);
    assert_eq!(
        counter(&scrape, "arena_snapshots_total", kind("delta")),
        2.0
    );
    assert_eq!(counter(&scrape, "arena_timeouts_total", None), 1.0);
    let reason = |r| Some(("reason", r));
    let rejected = "arena_rejected_datagrams_total";
    assert_eq!(counter(&scrape, rejected, reason("rate_limited")), 9.0);
    assert_eq!(counter(&scrape, rejected, reason("bad_framing")), 0.0);
    // Histograms: every observation counted, in the right buckets.
    let Value::Histogram(buckets) = value(&scrape, "arena_snapshot_bytes", None) else {
        panic!("snapshot_bytes is not a histogram");
    };
    let le = |bound: f64| {
        buckets
            .iter()
            .find(|b| b.less_than == bound)
            .map(|b| b.count)
    };
    assert_eq!(le(32.0), Some(0.0));
    assert_eq!(le(64.0), Some(1.0));
    assert_eq!(le(128.0), Some(3.0));
    assert_eq!(le(f64::INFINITY), Some(3.0));
    let Value::Histogram(frames) = value(&scrape, "arena_frame_seconds", None) else {
        panic!("frame_seconds is not a histogram");
    };
    assert_eq!(frames.last().map(|b| b.count), Some(3.0));
    assert_eq!(
        scrape
            .samples
            .iter()
            .filter(|s| s.metric == "arena_rejected_datagrams_total")
            .count(),
        DropReason::ALL.len()
    );

    // A later scrape sees later values.
    metrics.set_clients(1);
    let (_, body) = get(server.local_addr(), b"GET /metrics HTTP/1.0\r\n\r\n");
    let scrape = Scrape::parse(body.lines().map(|l| Ok(l.to_owned()))).unwrap();
    assert_eq!(
        value(&scrape, "arena_connected_clients", None),
        Value::Gauge(1.0)
    );
}

#[test]
fn other_requests_are_refused_with_bounded_reads() {
    let metrics = ServerMetrics::new();
    let server = MetricsServer::spawn("127.0.0.1:0".parse().unwrap(), metrics.registry()).unwrap();
    let addr = server.local_addr();
    let (head, _) = get(addr, b"GET / HTTP/1.1\r\n\r\n");
    assert!(head.starts_with("HTTP/1.1 404"), "{head}");
    let (head, _) = get(addr, b"DELETE /metrics HTTP/1.1\r\n\r\n");
    assert!(head.starts_with("HTTP/1.1 405"), "{head}");
    // A head that never ends is cut off at MAX_REQUEST bytes.
    let mut huge = b"GET /metrics HTTP/1.1\r\nX-Pad: ".to_vec();
    huge.resize(MAX_REQUEST, b'a');
    let (head, _) = get(addr, &huge);
    assert!(head.starts_with("HTTP/1.1 413"), "{head}");
    // Still serving afterwards.
    let (head, _) = get(addr, b"GET /metrics HTTP/1.1\r\n\r\n");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
}
