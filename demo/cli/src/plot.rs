//! SVG plot of a demo's statistics: bytes per snapshot and entity count
//! over server time, one panel each.

use std::path::Path;

use plotters::prelude::*;

use demo::stats::DemoStats;
use demo::DemoError;

fn plot_error(e: impl std::fmt::Display) -> DemoError {
    DemoError::Io(std::io::Error::other(format!("plotting: {e}")))
}

/// Writes the plot of `stats` to `path` as SVG; `title` heads it.
pub fn write_svg(stats: &DemoStats, title: &str, path: &Path) -> Result<(), DemoError> {
    let root = SVGBackend::new(path, (1000, 640)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_error)?;
    let root = root.titled(title, ("sans-serif", 20)).map_err(plot_error)?;
    let (top, bottom) = root.split_vertically(300);
    let start = stats.samples.first().map_or(0, |s| s.time_ms);
    let seconds = |t: i64| (t - start) as f64 / 1000.0;
    let end = stats
        .samples
        .last()
        .map_or(1.0, |s| seconds(s.time_ms))
        .max(0.001);

    let bytes: Vec<(f64, f64)> = stats
        .samples
        .iter()
        .map(|s| (seconds(s.time_ms), s.bytes as f64))
        .collect();
    let max_bytes = stats.snapshot_bytes.max.max(1) as f64;
    let mut chart = ChartBuilder::on(&top)
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..end, 0.0..max_bytes * 1.05)
        .map_err(plot_error)?;
    chart
        .configure_mesh()
        .x_desc("server time (s)")
        .y_desc("bytes per snapshot")
        .draw()
        .map_err(plot_error)?;
    chart
        .draw_series(LineSeries::new(bytes, &BLUE))
        .map_err(plot_error)?
        .label(format!(
            "bytes (mean {:.1}, p99 {})",
            stats.snapshot_bytes.mean, stats.snapshot_bytes.p99
        ))
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLUE));
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(plot_error)?;

    let entities: Vec<(f64, f64)> = stats
        .samples
        .iter()
        .filter_map(|s| Some((seconds(s.time_ms), s.entities? as f64)))
        .collect();
    let max_entities = entities.iter().map(|p| p.1).fold(1.0, f64::max);
    let mut chart = ChartBuilder::on(&bottom)
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..end, 0.0..max_entities * 1.1)
        .map_err(plot_error)?;
    chart
        .configure_mesh()
        .x_desc("server time (s)")
        .y_desc("entities")
        .draw()
        .map_err(plot_error)?;
    chart
        .draw_series(LineSeries::new(entities, &RED))
        .map_err(plot_error)?;
    root.present().map_err(plot_error)?;
    Ok(())
}
