//! The llama.cpp ("local") view's figures, all from `vram_core`: the estimate of
//! `vram estimate --infer --engine llama.cpp`, its verdict against the machine, the solvers
//! (largest `-ngl`, longest context) and the "can I run it" table of `vram fit`. Pure logic, tested
//! natively.

use crate::page_scenario::PageScenario;
use vram_core::gpu_catalog::Verdict;
use vram_core::infer::llama_cpp::fit::{self, FitRow, Machine};
use vram_core::infer::llama_cpp::{self, LlamaCppEstimate};
use vram_core::report::DeviceOverheads;
use vram_core::{ModelSpec, Scenario};

/// The local view of one model and page scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct LocalResult {
    /// What llama.cpp allocates and prints.
    pub est: LlamaCppEstimate,
    /// The machine compared with.
    pub machine: Machine,
    /// Largest GPU: printed buffers + the device overhead.
    pub device_bytes: u64,
    /// Verdict of the largest GPU (and of the RAM: does not fit when the host share does not).
    pub verdict: Verdict,
    /// Whether the host share fits the RAM (on unified memory: GPU and host shares together).
    pub host_fits: bool,
    /// The weight type used (`Q4_K_M`, the GGUF file's).
    pub format_name: String,
    /// Whether the model has routed experts (`--n-cpu-moe` applies).
    pub has_experts: bool,
    /// Whether the model has sliding-window layers (`--swa-full` applies).
    pub has_swa: bool,
}

/// The solver answers (computed after the headline).
#[derive(Clone, Debug, PartialEq)]
pub struct LocalSolve {
    /// The largest `-ngl` that fits at the scenario's context (None: not even 0).
    pub max_ngl: Option<u64>,
    /// The longest context that fits with the scenario's placement (None: not even 256 tokens).
    pub max_ctx: Option<u64>,
}

/// The largest context the solvers try: the model's, else 128 Ki tokens.
pub fn ceiling(spec: &ModelSpec) -> u64 {
    match spec.max_position_embeddings {
        0 => 131_072,
        m => m,
    }
}

/// Whether the RAM holds the host share (as `fit::fits` checks it, without the headroom).
fn host_fits(e: &LlamaCppEstimate, m: &Machine) -> bool {
    if m.host_ram_bytes == 0 {
        return true;
    }
    let used = if m.unified {
        e.devices.iter().map(|d| d.total_bytes).sum::<u64>() + e.host_total_bytes
    } else {
        e.host_total_bytes
    };
    used <= m.host_ram_bytes
}

/// The estimate and verdict of the page's inference scenario under llama.cpp.
pub fn local_result(spec: &ModelSpec, page: &PageScenario) -> Result<LocalResult, String> {
    let s = page.infer_scenario();
    let e = vram_core::infer::estimate_inference(spec, &s, &DeviceOverheads::default())
        .map_err(|e| e.to_string())?;
    let est = e
        .llama_cpp
        .ok_or_else(|| "engine: expected llama.cpp".to_string())?;
    let r = llama_cpp::resolve(spec, &s).map_err(|e| e.to_string())?;
    let machine = page.machine();
    let device_bytes = est.gpu_total_bytes + machine.device_overhead_bytes;
    let host_ok = host_fits(&est, &machine);
    let verdict = if !host_ok {
        Verdict::DoesNotFit
    } else if est.gpu_total_bytes == 0 {
        Verdict::Fits
    } else {
        Verdict::of(device_bytes, machine.gpu_usable_bytes)
    };
    Ok(LocalResult {
        machine,
        device_bytes,
        verdict,
        host_fits: host_ok,
        format_name: r.format_name.clone(),
        has_experts: r.model.has_experts(),
        has_swa: r.model.n_swa > 0,
        est,
    })
}

/// The largest `-ngl` and the longest context that fit (`fit::max_gpu_layers`, `fit::max_context`).
pub fn local_solve(spec: &ModelSpec, page: &PageScenario) -> Option<LocalSolve> {
    let s = page.infer_scenario();
    let r = llama_cpp::resolve(spec, &s).ok()?;
    let m = page.machine();
    let n_seq = s.batch.max(1);
    Some(LocalSolve {
        max_ngl: fit::max_gpu_layers(&r, &s.llama_cpp, s.seq_len, n_seq, &m),
        max_ctx: fit::max_context(&r, &s.llama_cpp, n_seq, &m, ceiling(spec).max(s.seq_len)),
    })
}

/// One row of the "can I run it" table with the `weights` value that selects it (None: the GGUF
/// file's own type).
#[derive(Clone, Debug, PartialEq)]
pub struct FitTableRow {
    /// What clicking the row sets `Scenario::weights` to.
    pub select: Option<String>,
    /// The core's row, or why this type cannot be estimated.
    pub row: Result<FitRow, String>,
}

/// The "can I run it" table (`fit::can_i_run` over `fit::TABLE_TYPES`), as `vram fit` prints it.
pub fn fit_table(spec: &ModelSpec, page: &PageScenario, gguf_name: &str) -> Vec<FitTableRow> {
    let s: Scenario = page.infer_scenario();
    let m = page.machine();
    let mut selects: Vec<Option<String>> = fit::TABLE_TYPES
        .iter()
        .map(|t| Some(t.to_string()))
        .collect();
    if spec.gguf.is_some() {
        selects.insert(0, None);
    }
    fit::can_i_run(spec, &s, &m, fit::TABLE_TYPES, gguf_name)
        .into_iter()
        .zip(selects)
        .map(|(row, select)| FitTableRow {
            select,
            row: row.map_err(|e| e.to_string()),
        })
        .collect()
}

/// `4403.49 MiB` as llama.cpp prints buffer sizes.
pub fn mib(bytes: u64) -> String {
    format!("{:.2} MiB", bytes as f64 / (1u64 << 20) as f64)
}

/// `4.30 GiB`.
pub fn gib(bytes: u64) -> String {
    format!("{:.2} GiB", bytes as f64 / (1u64 << 30) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page_scenario::{GpuChoice, Task};
    use vram_core::scenario::Engine;

    fn page() -> PageScenario {
        let mut p = PageScenario {
            task: Task::Serve,
            gpu: GpuChoice::Catalog("rtx4090"),
            ..PageScenario::default()
        };
        p.infer.engine = Engine::LlamaCpp;
        p.infer.seq_len = 8192;
        p
    }

    fn llama() -> ModelSpec {
        crate::load::load_preset("meta-llama__Llama-3.1-8B")
            .unwrap()
            .spec
    }

    #[test]
    fn the_headline_is_the_cli_estimate_and_fits_a_4090() {
        let spec = llama();
        let p = page();
        let r = local_result(&spec, &p).unwrap();
        let cli = vram_core::infer::estimate_inference(
            &spec,
            &p.infer_scenario(),
            &DeviceOverheads::default(),
        )
        .unwrap();
        assert_eq!(Some(r.est.clone()), cli.llama_cpp);
        assert_eq!(r.est.layers_on_gpu, 32);
        assert_eq!(r.verdict, Verdict::Fits);
        assert_eq!(r.format_name, "Q4_K_M");
        assert!(!r.has_experts);
    }

    #[test]
    fn a_display_and_a_free_override_shrink_the_gpu() {
        let mut p = page();
        let full = p.machine().gpu_usable_bytes;
        p.local.display = true;
        assert_eq!(
            p.machine().gpu_usable_bytes,
            full - vram_core::gpu_catalog::DESKTOP_DISPLAY_ALLOWANCE_BYTES
        );
        p.local.free_bytes = Some(5 << 30);
        assert_eq!(p.machine().gpu_usable_bytes, 5 << 30);
        let r = local_result(&llama(), &p).unwrap();
        assert_eq!(r.verdict, Verdict::DoesNotFit);
        let solve = local_solve(&llama(), &p).unwrap();
        assert!(solve.max_ngl.unwrap() < 33);
    }

    #[test]
    fn the_fit_table_has_a_row_per_type_and_smaller_types_hold_more_context() {
        let rows = fit_table(&llama(), &page(), "");
        assert_eq!(rows.len(), fit::TABLE_TYPES.len());
        let f16 = rows[0].row.as_ref().unwrap();
        assert_eq!(f16.weights, "F16");
        let q4 = rows
            .iter()
            .find(|r| r.select.as_deref() == Some("q4_k_m"))
            .unwrap();
        let q4 = q4.row.as_ref().unwrap();
        assert_eq!(q4.placement, fit::PlacementKind::Gpu);
        assert!(q4.full_gpu_max_context > f16.full_gpu_max_context);
    }

    #[test]
    fn the_gguf_read_grows_to_what_the_header_needs_and_stops_at_the_file_end() {
        use crate::load::{gguf_step, GgufStep, LoadError};
        use vram_core::gguf_file::{encode_header, GgufValue};
        let header = encode_header(
            3,
            &[(
                "general.architecture".into(),
                GgufValue::Str("llama".into()),
            )],
            &[("token_embd.weight".into(), vec![64, 10], 0)],
        )
        .unwrap();
        match gguf_step("m.gguf", 1 << 30, &header[..8]) {
            GgufStep::Read(n) => assert!((16..=1 << 30).contains(&n), "{n}"),
            GgufStep::Done(r) => panic!("{r:?}"),
        }
        // the whole (truncated) file was read: refused, not read again
        match gguf_step("m.gguf", 8, &header[..8]) {
            GgufStep::Done(r) => assert!(matches!(*r, Err(LoadError::Gguf { .. }))),
            GgufStep::Read(n) => panic!("asked for {n} bytes of an 8-byte file"),
        }
        match gguf_step("m.gguf", 100, b"NOPE and more") {
            GgufStep::Done(r) => assert!(matches!(*r, Err(LoadError::Gguf { .. }))),
            GgufStep::Read(n) => panic!("{n}"),
        }
    }

    #[test]
    fn a_quantized_v_cache_needs_flash_attention() {
        let mut p = page();
        p.infer.llama_cpp.kv_dtype_v = Some("q8_0".into());
        p.infer.llama_cpp.flash_attn = vram_core::scenario::FlashAttn::Off;
        let err = crate::page_scenario::validate_llama(&p, &llama()).unwrap_err();
        assert!(err.starts_with("kv_dtype_v"), "{err}");
        p.infer.llama_cpp.flash_attn = vram_core::scenario::FlashAttn::On;
        assert!(crate::page_scenario::validate_llama(&p, &llama()).is_ok());
    }

    fn gguf_part(
        no: u16,
        count: u16,
        tensors: &[(String, Vec<u64>, u32)],
        meta: bool,
    ) -> vram_core::gguf_file::GgufHeader {
        use vram_core::gguf_file::{encode_header, parse_header, GgufValue};
        let mut kv: Vec<(String, GgufValue)> = Vec::new();
        if meta {
            for (k, v) in [
                ("general.architecture", GgufValue::Str("llama".into())),
                ("llama.block_count", GgufValue::U32(2)),
                ("llama.context_length", GgufValue::U32(4096)),
                ("llama.embedding_length", GgufValue::U32(64)),
                ("llama.feed_forward_length", GgufValue::U32(128)),
                ("llama.attention.head_count", GgufValue::U32(4)),
                ("llama.attention.head_count_kv", GgufValue::U32(2)),
                ("llama.vocab_size", GgufValue::U32(100)),
            ] {
                kv.push((k.into(), v));
            }
        }
        kv.push(("split.no".into(), GgufValue::U16(no)));
        kv.push(("split.count".into(), GgufValue::U16(count)));
        parse_header(&encode_header(3, &kv, tensors).unwrap()).unwrap()
    }

    fn tiny_tensors() -> Vec<(String, Vec<u64>, u32)> {
        let mut t: Vec<(String, Vec<u64>, u32)> =
            vec![("token_embd.weight".into(), vec![64, 100], 0)];
        for i in 0..2 {
            for (n, d) in [
                ("attn_norm", vec![64]),
                ("attn_q", vec![64, 64]),
                ("attn_k", vec![64, 32]),
                ("attn_v", vec![64, 32]),
                ("attn_output", vec![64, 64]),
                ("ffn_norm", vec![64]),
                ("ffn_gate", vec![64, 128]),
                ("ffn_up", vec![64, 128]),
                ("ffn_down", vec![128, 64]),
            ] {
                t.push((format!("blk.{i}.{n}.weight"), d, 0));
            }
        }
        t.push(("output_norm.weight".into(), vec![64], 0));
        t
    }

    #[test]
    fn the_parts_of_a_split_gguf_load_together_in_any_order_and_one_part_is_refused() {
        use crate::load::{load_gguf_files, LoadError, ModelSource};
        let t = tiny_tensors();
        let (a, b) = t.split_at(10);
        let p1 = gguf_part(0, 2, a, true);
        let p2 = gguf_part(1, 2, b, false);
        let n1 = "tiny-00001-of-00002.gguf".to_string();
        let n2 = "tiny-00002-of-00002.gguf".to_string();
        let m = load_gguf_files(&[(n2.clone(), p2.clone()), (n1.clone(), p1.clone())]).unwrap();
        assert_eq!(m.source, ModelSource::File("tiny.gguf".into()));
        assert_eq!(m.spec.name, "tiny.gguf");
        let all: u64 = t.iter().map(|(_, d, _)| d.iter().product::<u64>()).sum();
        assert_eq!(m.params.total, all);
        // one part alone: refused, naming the part
        match load_gguf_files(&[(n1.clone(), p1.clone())]) {
            Err(LoadError::Config { error, .. }) => {
                assert!(error.to_string().contains("part 1 of 2"), "{error}")
            }
            other => panic!("{other:?}"),
        }
        // a part given twice: refused
        assert!(load_gguf_files(&[(n1.clone(), p1.clone()), (n1, p1)]).is_err());
    }

    #[test]
    fn a_split_model_is_named_after_its_parts() {
        use crate::load::{split_model_name, split_part_name};
        assert_eq!(
            split_part_name("M-Q4-00002-of-00003.gguf"),
            Some(("M-Q4", 2, 3))
        );
        assert_eq!(split_part_name("M.gguf"), None);
        assert_eq!(
            split_model_name(&["M-Q4-00002-of-00003.gguf", "M-Q4-00001-of-00003.gguf"]),
            "M-Q4.gguf"
        );
        assert_eq!(
            split_model_name(&["big-part1.gguf", "big-part2.gguf"]),
            "big-part.gguf"
        );
        assert_eq!(split_model_name(&["a.gguf", "b.gguf"]), "model.gguf");
    }

    #[test]
    fn split_proportions_parse_as_llama_cpp_reads_them() {
        use crate::scenario_form::{parse_split, split_text};
        assert_eq!(parse_split("3,1", 1).unwrap(), vec![3.0, 1.0]);
        assert_eq!(
            parse_split(" 1 / 0.5 / 2 ", 1).unwrap(),
            vec![1.0, 0.5, 2.0]
        );
        assert_eq!(parse_split("", 3).unwrap(), vec![1.0; 3]);
        assert_eq!(parse_split("", 1).unwrap(), Vec::<f64>::new());
        assert_eq!(parse_split("5", 2).unwrap(), Vec::<f64>::new());
        for bad in ["3;1", "a,b", "0,0", "-1,2", "1,,2", "inf,1"] {
            let e = parse_split(bad, 2).unwrap_err();
            assert!(e.contains("e.g. 3,1") && e.contains(bad), "{bad}: {e}");
        }
        assert!(parse_split(&vec!["1"; 17].join(","), 1).is_err());
        assert_eq!(split_text(&[3.0, 1.0]), "3,1");
        assert_eq!(split_text(&[0.5, 1.5]), "0.5,1.5");
        assert_eq!(split_text(&[]), "");
        // the page's scenario with 3,1 is the CLI's --tensor-split 3,1
        let mut p = page();
        p.infer.llama_cpp.tensor_split = parse_split("3,1", 1).unwrap();
        let r = local_result(&llama(), &p).unwrap();
        assert_eq!(r.est.devices.len(), 2);
        assert!(r.est.devices[0].layers > r.est.devices[1].layers);
    }

    #[test]
    fn cpu_moe_moves_every_expert_to_the_host() {
        let spec = crate::load::load_preset("Qwen__Qwen3-30B-A3B")
            .unwrap()
            .spec;
        let mut p = page();
        let before = local_result(&spec, &p).unwrap();
        assert!(before.has_experts);
        p.infer.llama_cpp.cpu_moe = true;
        let after = local_result(&spec, &p).unwrap();
        assert!(after.est.gpu_total_bytes < before.est.gpu_total_bytes / 4);
        assert!(after.est.host_total_bytes > before.est.host_total_bytes);
    }
}
