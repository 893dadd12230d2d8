//! Trains the native-codec models of Quake 3's entity and player state on
//! real demos and writes them where `netq3_q3::model` includes them from.
//!
//! ```sh
//! cargo run --release -p netq3-q3 --example train_q3_models            # the committed training set
//! cargo run --release -p netq3-q3 --example train_q3_models -- A.dm_68 B.dm_68
//! ```

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut paths: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    if paths.is_empty() {
        paths = netq3_q3::model::training_paths(&netq3_q3::corpus::dir());
    }
    let files: Vec<Vec<u8>> = paths.iter().map(std::fs::read).collect::<Result<_, _>>()?;
    let models = netq3_q3::model::train(files.iter().map(Vec::as_slice))?;
    let bytes = postcard::to_allocvec(&models)?;
    let out = root.join("src/q3_models.postcard");
    std::fs::write(&out, &bytes)?;
    println!(
        "trained on {} demos; wrote {} bytes to {}",
        paths.len(),
        bytes.len(),
        out.display()
    );
    Ok(())
}
