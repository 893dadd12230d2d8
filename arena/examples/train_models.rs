//! Regenerates `arena/src/models.json`, the native-codec models of the
//! arena's tables, from a network-free training game and networked matches (see `arena::model`).
//!
//! ```sh
//! cargo run --release -p arena --example train_models
//! ```

fn main() -> std::io::Result<()> {
    let models = arena::model::train_committed().map_err(std::io::Error::other)?;
    let json = serde_json::to_string(&models).map_err(std::io::Error::other)?;
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/models.json");
    std::fs::write(&path, json + "\n")?;
    println!("wrote {}", path.display());
    Ok(())
}
