#!/usr/bin/env python3
"""Regenerates bench/data/published_runs.yaml (run once by hand; not part of the build).
Inputs: the first round's rows (git show 55682c6:bench/data/published_runs.yaml), the brief's
cases/published_runs_stacks.yaml and research_runs_2026.yaml (public runs found this round)."""
import re, subprocess, sys, yaml
old = yaml.safe_load(subprocess.run(['git', 'show', '55682c6:bench/data/published_runs.yaml'],
                                    capture_output=True, text=True, check=True).stdout)
shared = yaml.safe_load(open(sys.argv[1]))  # path of the brief's cases/published_runs_stacks.yaml
research = yaml.safe_load(open('research_runs_2026.yaml'))
precision_rows = yaml.safe_load(open('precision_runs_2026.yaml'))['runs']
rows = []
for r in old['runs']:
    src = r['source']; nar = src == 'narayanan-2021'
    model = dict(layers=r['layers'], hidden=r['hidden'], heads=r['heads'], ffn_hidden=4 * r['hidden'],
                 vocab=51200 if nar else 131072, seq_len=2048 if nar else 4096, tied_embeddings=nar)
    pins = dict(tp=r['tp'], pp=r['pp'], dp=r['dp'])
    if nar: pins['recompute'] = 'full'
    else: pins.update(zero=1, sequence_parallel='on' if r['tp'] > 1 else 'off')
    rows.append(dict(id=f"{src}-{r['params_b']}b", source=' '.join(old['sources'][src].split()),
                     # Megatron-LM r0.8's README table: megatron-core-perf's overlaps, its own
                     # unfused loss (stacks/megatron-lm-r08-perf.yaml says where).
                     stack='megatron-2021' if nar else 'stacks/megatron-lm-r08-perf.yaml',
                     cluster='dgx-a100' if nar else 'dgx-h100', gpus=r['gpus'],
                     precision='fp16' if nar else 'bf16', global_batch=r['batch'], model=model, pins=pins,
                     measured={'narayanan_tflops_per_gpu': r['tflops_per_gpu']} if nar
                     else {'model_tflops_per_gpu': r['tflops_per_gpu']}))

def pins_of(p):
    out = {}
    for k in ('tp', 'pp', 'dp', 'micro_batch', 'vp', 'zero'):
        if isinstance(p.get(k), int): out[k] = p[k]
    if isinstance(p.get('dp_shard'), int) and p['dp_shard'] != p.get('dp'): out['dp_shard'] = p['dp_shard']  # HSDP
    for k in ('cp', 'ep'):  # context / expert parallel: pinned only when above 1
        if isinstance(p.get(k), int) and p[k] > 1: out[k] = p[k]
    if p.get('recompute') in ('none', 'selective', 'full'): out['recompute'] = p['recompute']
    if p.get('sequence_parallel') in ('on', 'off'): out['sequence_parallel'] = p['sequence_parallel']
    if isinstance(p.get('recompute_layers'), int): out['recompute_layers'] = p['recompute_layers']  # partial
    return out

def clean_model(m):
    keep = {}
    for k, v in m.items():
        if k in ('layers', 'hidden', 'heads', 'kv_heads', 'ffn_hidden', 'seq_len'): keep[k] = int(v)
        elif k == 'vocab': keep[k] = int(re.findall(r'\d{4,}', str(v))[-1])
        elif k == 'ffn': keep[k] = {'squared-relu (non-gated)': 'relu2'}.get(v, v)
        elif k == 'tied_embeddings': keep[k] = v if isinstance(v, bool) else True
        elif k in ('norm', 'bias', 'position_embedding'): keep[k] = v
    return keep

for r in shared['runs']:
    if r['precision'] == 'fp8': continue  # FP8 as it really runs is the precision issue's
    # llm-foundry's 2023 tables ran its Triton FlashAttention (stacks/llm-foundry-2023*.yaml).
    stack = {'nemo-gpt3-5b-8xA100-80': 'stacks/nemo-2022.yaml',
             'mpt-70b-64xA100-80-fsdp': 'stacks/llm-foundry-2023-pure.yaml',
             'mpt-7b-8xA100-80-fsdp': 'stacks/llm-foundry-2023.yaml', 'mpt-7b-8xH100-fsdp': 'stacks/llm-foundry-2023.yaml',
             # torchtitan@041336434916 docs/performance.md ran eager (compile = false): its stack file.
             'titan-llama3-8b-64xA100-80-fsdp': 'stacks/torchtitan-2404.yaml',
             # DeeperSpeed 0.3.15's legacy ZeRO-1, reduce-scattering (the stack file says where).
             'gpt-neox-20b-96xA100-40': 'stacks/gpt-neox-2022.yaml'}.get(r['id'], 'fsdp')
    row = dict(id=r['id'], source=' '.join(r['source'].split()), stack=stack, gpus=r['gpus'],
               precision=r['precision'], global_batch=r['global_batch'], pins=pins_of(r['parallel']))
    c = r['cluster']
    if 'preset' in c: row['cluster'] = c['preset']
    else:
        row['cluster'] = 'dgx-a100'; row['gpu'] = c['gpu']
        row['nics_per_server'] = c['network']['nics_per_server']; row['nic_gbits'] = c['network']['nic_gbits']
        row['links_per_gpu'] = c['nvlink']['links_per_gpu']
    m = r['model']
    row['model'] = {'preset': m['preset']} if 'preset' in m else clean_model(m)
    meas = r['measured']
    # GPT-NeoX-20B's 117 TFLOP/s is GPT-NeoX's own logged figure (megatron/logging.py get_flops:
    # 6 x parameters + 60 s h l per token, no recompute factor), not Narayanan's formula.
    flops_key = 'gpt_neox_tflops_per_gpu' if r['id'] == 'gpt-neox-20b-96xA100-40' else 'narayanan_tflops_per_gpu'
    row['measured'] = ({'tokens_per_s_per_gpu': meas['tokens_per_s_per_gpu']} if 'tokens_per_s_per_gpu' in meas
                       else {flops_key: meas['hardware_tflops_per_gpu']})
    if r['id'] == 'gpt-neox-20b-96xA100-40':
        row['notes'] = ('117 TFLOP/s read as GPT-NeoX logs it (EleutherAI/gpt-neox@166f72d4 megatron/logging.py L77-87 '
                        'get_flops, model.total_params from get_total_params: all TP x PP ranks): 1536 x 2048 tokens x '
                        '(6 x 20,556,201,984 + 60 x 2048 x 6144 x 44) / (96 x 117e12) = 43.85 s a step; consistent with the '
                        '1,830 training hours over 150,000 steps (43.9 s) that nl2code.github.io/posts/GPT-NeoX restates '
                        'from the paper. Until 2026-12-02 read with Narayanan\'s '
                        'formula (recompute counted): 47.66 s.')
    rows.append(row)

wanted = ['lf-mpt13b-512xh100-bf16', 'lf-mpt30b-512xh100-bf16', 'lf-mpt70b-512xh100-bf16', 'lf-mpt13b-64xh100-bf16-noac',
          'lf-mpt30b-32xh100-bf16', 'lf-mpt13b-128xa100-40g-bf16', 'lf-mpt30b-128xa100-40g-bf16', 'lf-mpt70b-128xa100-40g-bf16',
          'lf-mpt30b-8xa100-80g-bf16', 'bloom-176b-384xa100-80g-bf16', 'mtnlg-530b-2240xa100-bf16', 'mtnlg-530b-2800xa100-bf16',
          'mtnlg-530b-3360xa100-bf16', 'dgxc2411-gpt3-175b-128xh100-bf16', 'dgxc2411-gpt3-175b-2048xh100-bf16',
          'dgxc2411-nemotron4-340b-128xh100-bf16', 'dgxc2411-nemotron4-15b-16xh100-bf16',
          'llama3-405b-8192xh100-bf16', 'llama3-405b-16384xh100-bf16',
          'nemo2407-gpt3-175b-128xh100-fp8', 'nemo2407-gpt3-175b-512xh100-fp8',
          'tt-l31-8b-fsdp-32xh200-fp8', 'tt-l31-8b-fsdp-64xh200-fp8']
# FP8 as each source ran it: NeMo 24.07 launcher confs set fp8 + fp8_hybrid (delayed) without
# fp8_params; torchtitan's Float8 with enable_fsdp_float8_all_gather is tensorwise dynamic
# scaling (current) with the weights all-gathered in FP8.
fp8_of = {'nemo2407-gpt3-175b-128xh100-fp8': {'recipe': 'delayed'},
          # The 512-GPU row's micro-batch 2 is not the launcher conf's (1); its TFLOP/s links to
          # MLPerf, whose NVIDIA GPT-3 config runs this split (TP4 PP8 MBS2 on 64 DGX-H100) with
          # FP8_PARAMS=True (henrique/training_results_v4.0@c7a8e8f8, a fork of
          # mlcommons/training_results_v4.0, NVIDIA/benchmarks/gpt3/implementations/nemo/config_common.sh).
          'nemo2407-gpt3-175b-512xh100-fp8': {'recipe': 'delayed', 'params': True},
          'tt-l31-8b-fsdp-32xh200-fp8': {'recipe': 'current', 'params': True},
          'tt-l31-8b-fsdp-64xh200-fp8': {'recipe': 'current', 'params': True}}
by_id = {r['id']: r for r in research['runs']}
by_id.update({r['id']: r for r in precision_rows})
NEMO_2407 = [r['id'] for r in precision_rows if r['id'].startswith('nemo2407-')]
DGXC_2504_L31 = [r['id'] for r in precision_rows if r['id'].startswith(('dgxc2504-l31-', 'dgxc2507-'))]
DGXC_2505_GB200 = [r['id'] for r in precision_rows if r['id'].startswith('dgxc2505-')]
NEMO_2504_B200 = [r['id'] for r in precision_rows if r['id'].startswith('nemo2504-')]
wanted += [r['id'] for r in precision_rows
           if r['id'] not in NEMO_2407 + DGXC_2504_L31 + DGXC_2505_GB200 + NEMO_2504_B200
           and not r['id'].startswith('nemo2403-')]
wanted += [  # appended last: the earlier rows keep their halves
    # Context parallel 2 (issue 13): NVIDIA dgxc-benchmarking 24.11 Llama 3.1 recipes.
    'dgxc2411-l31-8b-8xh100-bf16', 'dgxc2411-l31-8b-128xh100-bf16', 'dgxc2411-l31-70b-64xh100-bf16',
    'dgxc2411-l31-70b-2048xh100-bf16', 'dgxc2411-l31-405b-576xh100-bf16', 'dgxc2411-l31-405b-2304xh100-bf16',
    # Expert parallel (issue 13): NVIDIA dgxc-benchmarking DeepSeek-V3 BF16 on H100 and GB200.
    'dgxc-dsv3-512xh100-bf16', 'dgxc-dsv3-1024xh100-bf16', 'dgxc-dsv3-128xgb200-bf16',
    'dgxc-dsv3-256xgb200-bf16', 'dgxc-dsv3-512xgb200-bf16']
# NeMo 24.07's performance summary beside its GPT-3 175B rows (FP8, H100; added 2026-12-02, last).
wanted += NEMO_2407
# dgxc-benchmarking v25.04.01's Llama 3.1 splits that differ from 24.11's, and v25.07's GB200 example (added 2026-12-02, last).
wanted += DGXC_2504_L31
# NeMo 24.03.01's long-sequence table, Llama 2 7B FP8 from 4K to 1M tokens, CP up to 32 (added 2026-12-02, last).
NEMO_2403_LONG = [r['id'] for r in precision_rows if r['id'].startswith('nemo2403-')]
wanted += NEMO_2403_LONG
# dgxc-benchmarking v25.05.05's GB200 Llama 3.1 405B table, BF16 256/512 and FP8 128-512 (added 2026-12-02, last).
wanted += DGXC_2505_GB200
# NeMo's long-sequence page, Llama 3 8B FP8 on DGX-B200 with CP (NeMo 25.04.rc2; added 2026-12-02, last).
wanted += NEMO_2504_B200
# NeMo-Megatron-Launcher 2022's scaling tables beside the 1-node 5B row: GPT-3 5B on 2-32 nodes,
# 175B on 8-128 nodes, under the NeMo 2022 stack file (added 2026-12-02, fifth session, last).
wanted += [r['id'] for r in research['runs'] if r['id'].startswith('nemo2022-')]
# Korthikanti et al. 2022's end-to-end table (Megatron-LM's sequence_parallel branch on Selene:
# 22B-1T with full and with selective recompute, no data parallelism; 530B at DP 8), under
# stacks/megatron-lm-2022.yaml (added 2026-12-02, fifth session, last).
wanted += [r['id'] for r in research['runs'] if r['id'].startswith('korthikanti-')]
# The same launcher's July 2022 tables (NeMo 1.10, FusedAdam; added 2026-12-02, fifth session, last).
wanted += [r['id'] for r in research['runs'] if r['id'].startswith('nemo2206-')]
# IBM fms-fsdp's README benchmark, Llama 2 7B-70B with FSDP1 on 128 A100 and 96 H100 (added
# 2026-12-02, fifth session, last).
wanted += [r['id'] for r in research['runs'] if r['id'].startswith('fms-llama2-')]
# The rest of torchtitan's April 2024 A100 tables beside its Llama 3 8B row (added 2026-12-02, fifth session, last).
wanted += [r['id'] for r in research['runs'] if r['id'].startswith('titan-llama')]
# (its two 'selective layer' rows, every other block recomputed, last: added 2026-12-02, sixth session)
# NeMo-Megatron-Launcher's release-performance CI of August 2022: GPT-3 126M-40B, one model's
# TP x PP splits on one cluster, measured by one harness (added 2026-12-03, ninth session, last).
wanted += [r['id'] for r in research['runs'] if r['id'].startswith('nemoci2208-')]
# The same launcher's July 2022 CI result for the 175B at TP 8 x PP 16 on 16 nodes (added
# 2026-12-04, seventeenth session, last).
wanted += [r['id'] for r in research['runs'] if r['id'].startswith('nemoci2207-')]
for r in precision_rows: fp8_of[r['id']] = r['fp8'] if 'fp8' in r else None
for rid in wanted:
    r = by_id[rid]; p = dict(r['parallel']); stack = r['stack']
    if rid.startswith('llama3-405b'): stack = 'torchtitan'; p['zero'] = 3   # FSDP with PP, no reshard
    if rid.startswith('mtnlg'): p['zero'] = 1                               # DeepSpeed ZeRO-1 (paper)
    if rid.startswith('dgxc'): stack = 'megatron-core-perf'                  # ub_tp_comm_overlap in the yamls
    if rid.startswith('dgxc2411-nemotron4-340b'): stack = 'stacks/nemo-2409-optim-bf16.yaml'  # optim dtype bf16
    if rid.startswith('lf-'): stack = 'fsdp'                                 # amp_bf16 DEFAULT in the table notes
    # The 2023 tables (all but the January 2024 "Large Scale" H100 section, 512 GPUs here) ran
    # llm-foundry's Triton FlashAttention: stacks/llm-foundry-2023.yaml.
    if rid.startswith('lf-') and '512xh100' not in rid: stack = 'stacks/llm-foundry-2023.yaml'
    # The A100 40GB table's rows say "bf16 | PURE" (pure bf16 FSDP mixed precision: bf16
    # gradient reduction), as the 80GB table's 70B row the -pure stack was made for (a helper's
    # audit of the rows, 2026-12-06).
    if rid.endswith('-128xa100-40g-bf16'): stack = 'stacks/llm-foundry-2023-pure.yaml'
    row = dict(id=rid, source=' '.join(r['source'].split()), stack=stack, gpus=r['gpus'], precision=r['precision'],
               global_batch=r['global_batch'], pins=pins_of(p),
               model=r['model'] if 'preset' in r['model'] else clean_model(r['model']))
    if fp8_of.get(rid): row['fp8'] = fp8_of[rid]
    # Context parallelism as NeMo ran these Llama/GPT rows: their model configs set no
    # cp_comm_type, and Megatron-Core then asks Transformer Engine for ring attention
    # (NVIDIA/Megatron-LM core_r0.11.0 megatron/core/extensions/transformer_engine.py L674-675:
    # cp_comm_type None -> "p2p"; NeMo@00b778eb sets a2a only for Mistral's sliding window).
    if row['pins'].get('cp', 1) > 1 and rid.startswith(('dgxc', 'nemo')):
        row['pins']['cp_comm'] = 'p2p'
    if rid.startswith(('dgxc2411-l31', 'dgxc2504-l31')):  # Llama 3.1: RMSNorm, no biases, RoPE (HF config.json)
        row['model'].update(norm='rmsnorm', bias=False, position_embedding='rope')
    row['cluster'] = ('dgx-h100' if r['gpu'].startswith('h100') else
                      'dgx-b200' if r['gpu'] == 'b200' else
                      'hgx-h200' if r['gpu'].startswith('h200') else
                      'gb200-nvl72' if r['gpu'] == 'gb200' else 'dgx-a100')
    if rid.startswith('dgxc-dsv3'): row['stack'] = 'megatron-core'  # no userbuffers stated
    if rid == 'nemo2407-gpt3-175b-512xh100-fp8':
        # MLPerf's settings (see fp8_of): TP_COMM_OVERLAP=True (userbuffers) in
        # config_DGXH100_64x8x128x4x8_mbs2.sh and grad_sync_dtype: bf16 in
        # conf/optim/distributed_fused_adam.yaml (mlcommons/training_results_v4.0@62f111b7
        # NVIDIA/benchmarks/gpt3/implementations/nemo/): NeMo's performance mode.
        row['stack'] = 'megatron-core-perf'
    if r['gpu'] == 'a100-sxm-40g': row['gpu'] = 'a100-sxm-40g'
    for key in ('nics_per_server', 'nic_gbits'):  # a row's own NICs (fms-fsdp's stated per-node rate)
        if key in r: row[key] = r[key]
    if rid.startswith('bloom'):  # Jean Zay: 4 Omni-Path links of 100 Gb/s per node (tr11 README)
        row['nics_per_server'] = 4; row['nic_gbits'] = 100
    # NeMo-Framework-Launcher 24.01-24.07 runs every job with NVTE_FUSED_ATTN=0 (flash-attn 2):
    # the NeMo 24.07 table's rows, under the stack their conf's userbuffers setting picks.
    # Their optimizer as each conf and launcher example sets it (the stack files say where):
    # Nemotron-4 340B's conf syncs and keeps the optimizer in bf16; the Nemotron 8B/22B examples
    # leave apex's gradient sync at fp32; the 512-GPU GPT-3 row runs MLPerf's FP8 parameters.
    if rid.startswith('nemo2407-'):
        row['stack'] = {'megatron-core': 'stacks/nemo-launcher-2407.yaml',
                        'megatron-core-perf': 'stacks/nemo-launcher-2407-perf.yaml'}[row['stack']]
        if rid.startswith('nemo2407-nemotron-340b'):
            row['stack'] = 'stacks/nemo-launcher-2407-optim-bf16.yaml'
        elif rid.startswith(('nemo2407-nemotron-8b', 'nemo2407-nemotron-22b')):
            row['stack'] = 'stacks/nemo-launcher-2407-perf-grad-fp32.yaml'
        elif rid == 'nemo2407-gpt3-175b-512xh100-fp8':
            row['stack'] = 'stacks/nemo-launcher-2407-perf-fp8-params.yaml'
    # The loss each release ran (the stack files cite the confs): NeMo 24.07's Llama 3 confs and dgxc 24.11/25.04's Llama 3.1 and Nemotron-4 15B
    # fused with Megatron-Core's own kernels; the NeMo 25.04 scripts behind the GB200, B200 and
    # DeepSeek-V3 rows with Transformer Engine's Triton kernel (megatron-core-perf's).
    if rid.startswith(('dgxc2411-l31-', 'dgxc2411-nemotron4-15b', 'dgxc2504-l31-',
                       'dgxc2504-nemotron4-15b')) and row['stack'] == 'megatron-core-perf':
        row['stack'] = 'stacks/megatron-core-perf-native-ce.yaml'
    if rid == 'nemo2407-llama3-8b-8xh100-fp8':
        row['stack'] = 'stacks/nemo-launcher-2407-fused-ce.yaml'
    if rid == 'nemo2407-llama3-70b-64xh100-fp8':
        row['stack'] = 'stacks/nemo-launcher-2407-perf-fused-ce.yaml'
    if rid.startswith('dgxc-dsv3'):
        row['stack'] = 'stacks/nemo-2504-moe.yaml'
    if rid.startswith('dgxc-dsv3') and 'xh100' in rid:  # launch.sh: H100 RM='mla_up_proj'
        row['stack'] = 'stacks/nemo-2504-moe-mla-up.yaml'
        row['pins']['recompute'] = 'selective'
    if rid.startswith('dgxc2411-gpt3-'):  # nemo_megatron/launch.sh: NVTE_FUSED_ATTN=0
        row['stack'] = 'stacks/dgxc-2411-fa2-perf.yaml'
    if rid.startswith(('nemo2403-', 'nemo2504-')) and r['gpus'] < 8:  # part of one DGX, as --gpus-per-server
        row['gpus_per_server'] = r['gpus']
    if rid.startswith('mtnlg'):  # Selene: 8 x 200 Gb/s HDR per DGX A100 (the dgx-a100 preset)
        pass
    meas = r['measured']
    for key in ('step_time_s', 'tokens_per_s_per_gpu', 'model_tflops_per_gpu', 'mfu'):
        if key in meas: row['measured'] = {key: meas[key]}; break
    if r.get('notes'): row['notes'] = ' '.join(r['notes'].split())[:1200]
    if rid == 'nemo2407-gpt3-175b-512xh100-fp8':
        row['notes'] = ('Micro-batch 2 is not the launcher conf\'s; the row links its TFLOP/s to MLPerf, so it is '
                        'priced with MLPerf v4.0 NVIDIA GPT-3 settings for the same split: FP8 parameters '
                        '(config_common.sh FP8_PARAMS=True), TE userbuffers (TP_COMM_OVERLAP=True) and bf16 '
                        'gradient sync (distributed_fused_adam.yaml grad_sync_dtype: bf16) = megatron-core-perf. '
                        'Inferred, not stated by the NeMo table. ' + row.get('notes', ''))[:900]
    rows.append(row)
# Dropout (memory: masks are kept only where the model has dropout; the model loader defaults to
# 0.1 with learned positions, 0 otherwise). Set where the row's model file would need it:
DROPOUT = [  # (id prefix, probability, source)
    ('mpt-', 0.0, 'mosaicml/llm-foundry@8c8dd48 config_defaults.py attn_pdrop 0.0, configuration_mpt.py resid/emb_pdrop 0.0'),
    ('lf-mpt', 0.0, 'mosaicml/llm-foundry@8c8dd48 (as above)'),
    ('gpt-neox-20b', 0.0, 'EleutherAI/gpt-neox@ea7aefd configs/20B.yml hidden_dropout 0, attention_dropout 0'),
    ('bloom-', 0.1, 'bigscience-workshop/bigscience@9e64ede train/tr11-176B-ml/README.md: Megatron-LM defaults 0.1'),
    ('dgxc2411-nemotron4', 0.0, 'NVIDIA/dgxc-benchmarking@35a9aec nemotron/nemotron4-*-synth.yaml hidden_dropout 0.0'),
    ('llama3-405b', 0.0, 'Llama 3 (Grattafiori et al. 2024): no dropout layers'),
]
for row in rows:
    for prefix, p, _ in DROPOUT:
        if row['id'].startswith(prefix) and 'preset' not in row['model']: row['model']['dropout'] = p
# NVIDIA-NeMo/Megatron-Bridge's performance summary, NeMo 25.11-26.06 containers: dense Llama 3 / 3.1
# (FP8 current scaling and MXFP8) on H100, B200 and GB200, DeepSeek-V3 BF16 on GB200 and Qwen3 MoE
# (bridge_runs_2026.yaml: the selection rule, each row's recipe read at the commit that published it;
# added 2026-12-05, twenty-second session, last, as checking data: no constant changed for them).
BRIDGE_LEFT_OUT = {
    # The 25.11 table says FSDP 8 for this row; the H100 8B recipe at the commit that published it
    # has no FSDP (distributed optimizer, full recompute of 5 layers, removed on 2025-11-21): which
    # configuration ran is not established.
    'mb2511-llama3-8b-8xh100-fp8cs',
    # CPU activation offloading of 40 of the 80 layers (the 26.04.01 GB200 70B FSDP recipe):
    # trident has no offloading, so the published knobs cannot all be pinned.
    'mb260401-llama3-70b-64xgb200-fp8cs',
    # The 26.02.01 table gives Qwen3-30B-A3B on 16 H100s the 26.02 split (PP 2, VP 12, EP 8), but
    # the recipe at the commit that published it had become PP 1, EP 16 with HybridEP, and the
    # number (9058) is 77% above the same split's in 26.02 (5113), level with the later PP 1 rows:
    # it belongs to another split.
    'mb260201-qwen3-30b-16xh100-fp8',
}
# Qwen3 recipes that overlap the EP all-to-alls with another micro-batch's compute
# (moe_a2a_overlap: overlap_moe_expert_parallel_comm and delay_wgrad_compute, qwen3_workload_
# base_configs.py@1804c076 L143, L238; @21d102f5 L183). Left out until trident priced the
# combined 1F1B (2026-12-05); appended after the other rows so that no row's half changed.
BRIDGE_EP_OVERLAP = ['mb2511-qwen3-30b-16xh100-fp8cs', 'mb2511-qwen3-235b-256xh100-fp8cs',
                     'mb260401-qwen3-235b-256xh100-fp8']
# Qwen3 recipes on the flex dispatcher with HybridEP on H100 (moe_flex_dispatcher_backend
# "hybridep", qwen3_workload_base_configs.py@c270efc505ff L458-477; 2026-12-06).
BRIDGE_HYBRIDEP = ['mb2606-qwen3-30b-16xh100-fp8']
def summary_row(r, stack, model):
    """A performance-summary row (bridge_runs_2026.yaml's format) as published_runs.yaml writes it."""
    row = dict(id=r['id'], source=' '.join(r['source'].split()), stack=stack, gpus=r['gpus'],
               precision=r['precision'], global_batch=r['global_batch'], pins=dict(r['pins']),
               model=model)
    if r.get('fp8'): row['fp8'] = r['fp8']
    row['cluster'] = r['cluster']
    if r.get('gpu'): row['gpu'] = r['gpu']  # a cluster preset with another GPU (paper_runs_2026.yaml)
    row['measured'] = dict(r['measured'])
    row['notes'] = ' '.join(str(r.get('notes', '')).split())[:1200]
    return row
bridge = yaml.safe_load(open('bridge_runs_2026.yaml'))['runs']
bridge = ([r for r in bridge if r['id'] not in BRIDGE_EP_OVERLAP] +
          [r for i in BRIDGE_EP_OVERLAP for r in bridge if r['id'] == i])
for r in bridge:
    if r['id'] in BRIDGE_LEFT_OUT: continue
    stack = ('stacks/megatron-bridge-perf-moe-bf16.yaml' if '-dsv3-' in r['id'] else
             'stacks/megatron-bridge-perf-no-param-overlap.yaml'
             if r['id'] == 'mb2511-llama31-405b-128xb200-mxfp8' else
             'stacks/megatron-bridge-perf-ep-overlap.yaml' if r['id'] in BRIDGE_EP_OVERLAP else
             'stacks/megatron-bridge-perf-hybridep.yaml' if r['id'] in BRIDGE_HYBRIDEP else
             'stacks/megatron-bridge-perf.yaml')
    model = dict(r['model'])
    if 'preset' in model and len(model) > 1:  # a preset with keys changed: written out whole
        preset = yaml.safe_load(open('../../configs/models/' + model.pop('preset') + '.yaml'))
        preset.pop('training', None)
        model = {**preset, **model}
        model['name'] = r['id']
    rows.append(summary_row(r, stack, model))
# NeMo's own performance summaries for its 25.02 (DGX-B200) and 25.04 (DGX-GB200) containers: the
# eight models of each table, FP8 (nemo_summary_runs_2026.yaml: the selection, each recipe read in
# NVIDIA/NeMo v2.2.0 / v2.3.0; added 2026-12-05, twenty-fifth session, last, as checking data: no
# constant changed for them). Same format as the Megatron-Bridge rows.
for r in yaml.safe_load(open('nemo_summary_runs_2026.yaml'))['runs']:
    rows.append(summary_row(r, r['stack'], r['model']))
# MegaScale's Megatron-LM baseline, GPT-3 175B on 256 to 12,288 A100s (megascale_runs_2026.yaml: the
# paper's statements and the assumptions; added 2026-12-05, twenty-seventh session, last, as checking
# data: no constant changed for them).
for r in yaml.safe_load(open('megascale_runs_2026.yaml'))['runs']:
    rows.append(summary_row(r, r['stack'], r['model']))
# Runs from papers and training logs (paper_runs_2026.yaml: GLM-130B, Nemotron-4 15B; added
# 2026-12-07, forty-second session, last, as checking data: no constant changed for them).
for r in yaml.safe_load(open('paper_runs_2026.yaml'))['runs']:
    rows.append(summary_row(r, r['stack'], dict(r['model'])))  # a copy: no YAML alias written
for i, row in enumerate(rows): row['half'] = 'tuning' if i % 2 == 0 else 'checking'
hdr = open('published_runs.header').read()
open('published_runs.yaml', 'w').write(hdr + yaml.dump({'runs': rows}, sort_keys=False, width=120))
print(len(rows), 'rows')
