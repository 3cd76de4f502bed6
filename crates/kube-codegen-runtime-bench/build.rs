fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The benchmarks' Widget type, generated as users generate theirs.
    kube_codegen::Builder::new().input("crds").generate()?;
    Ok(())
}
