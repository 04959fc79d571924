//! The command-line tests, one binary for all of them: every file below used to be a test
//! binary of its own, each linking the same test dependencies; they share one `common`
//! module (running the binary, scratch paths, HTTP) through `use crate::common`.

mod common;

#[path = "bench_cli.rs"]
mod bench_cli;
#[path = "check_cli.rs"]
mod check_cli;
#[path = "check_nvml_cli.rs"]
mod check_nvml_cli;
#[path = "check_sim_cli.rs"]
mod check_sim_cli;
#[path = "check_wake_cli.rs"]
mod check_wake_cli;
#[path = "completions_man.rs"]
mod completions_man;
#[path = "cuda_cli.rs"]
mod cuda_cli;
#[path = "cuda_fake_cli.rs"]
mod cuda_fake_cli;
#[path = "exec_cli.rs"]
mod exec_cli;
#[path = "gpu_check_script.rs"]
mod gpu_check_script;
#[path = "hostile_cli.rs"]
mod hostile_cli;
#[path = "model_cli.rs"]
mod model_cli;
#[path = "netfpga_cli.rs"]
mod netfpga_cli;
#[path = "output_paths_cli.rs"]
mod output_paths_cli;
#[path = "pmu_cli.rs"]
mod pmu_cli;
#[path = "pmu_limits_cli.rs"]
mod pmu_limits_cli;
#[path = "pmu_list_json.rs"]
mod pmu_list_json;
#[path = "pmu_record_cli.rs"]
mod pmu_record_cli;
#[path = "pmu_serve_cli.rs"]
mod pmu_serve_cli;
#[path = "pmu_serve_health.rs"]
mod pmu_serve_health;
#[path = "pmu_serve_http.rs"]
mod pmu_serve_http;
#[path = "pmu_serve_reload.rs"]
mod pmu_serve_reload;
#[path = "pmu_serve_tls.rs"]
mod pmu_serve_tls;
#[path = "pmu_signal_cli.rs"]
mod pmu_signal_cli;
#[path = "pmu_sim_cli.rs"]
mod pmu_sim_cli;
#[path = "pmu_stat_cli.rs"]
mod pmu_stat_cli;
#[path = "pmu_top_cli.rs"]
mod pmu_top_cli;
#[path = "pmu_validate_fio.rs"]
mod pmu_validate_fio;
#[path = "real_hosts_cli.rs"]
mod real_hosts_cli;
#[path = "report_browser.rs"]
mod report_browser;
#[path = "report_cli.rs"]
mod report_cli;
#[path = "sim_fit_cli.rs"]
mod sim_fit_cli;
