//! `--backend cuda[:N]` where no NVIDIA driver is installed (this machine, CI): a usage error
//! naming the library and dlopen's reason, nothing written. On a GPU machine the same command
//! runs the test.

use crate::common;
use common::*;

#[test]
fn without_a_driver_the_cuda_backend_exits_2_and_writes_nothing() {
    let dir = std::env::temp_dir().join(format!("pcieperf-cuda-{}", std::process::id()));
    let out = dir.join("run");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let o = pcieperf(&[
        "bench",
        "run",
        "--backend",
        "cuda",
        "--test",
        "LAT_RD",
        "--samples",
        "1000",
        "--out",
        out.to_str().unwrap(),
    ]);
    if o.status.code() == Some(0) {
        eprintln!("a GPU ran the test: {}", stdout(&o));
        assert!(out.join("run.json").is_file());
    } else {
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(
            stderr(&o).starts_with("error: --backend cuda: no NVIDIA driver found (libcuda.so.1): "),
            "{}",
            stderr(&o)
        );
        assert!(!out.exists(), "nothing written");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn engine_and_device_index_are_checked_before_the_driver() {
    let e = refused(&["bench", "run", "--engine", "ce"]);
    assert!(e.contains("--engine: only for cuda backends"), "{e}");
    let e = refused(&["bench", "run", "--backend", "cuda", "--engine", "gpu"]);
    assert!(
        e.contains("--engine gpu: must be sm (the GPU's threads) or ce (the copy engines)"),
        "{e}"
    );
    let e = refused(&["bench", "run", "--backend", "cuda:x"]);
    assert!(e.contains("--backend cuda:x: must be cuda or cuda:N"), "{e}");
}
