#!/usr/bin/env python3
"""Runs llm-foundry's 2023 throughput tables (bench/data/llm_foundry_2023_tables.yaml) through
`trident plan` with every published knob pinned, and prints the error per row and per
sequence-length band. Run by hand (not part of the build or the tests):

    python3 bench/data/llm_foundry_sweep.py [--trident build/cli/trident] [--stack NAME|FILE]
                                            [--gpu-file GPU.yaml] [--only GPU]

--stack defaults to bench/data/stacks/llm-foundry-2023.yaml (what the tables ran); --stack fsdp
prices them with FlashAttention-2. --gpu-file replaces the preset GPU of every row (e.g. a copy
with another attention curve); --only h100-sxm-80g|a100-sxm-80g keeps one table."""
import argparse, json, os, subprocess, sys, tempfile
import yaml

CLUSTER = {'h100-sxm-80g': 'dgx-h100', 'a100-sxm-80g': 'dgx-a100'}


def plan(args, row, model_file):
    cmd = [args.trident, 'plan', '--cluster', CLUSTER[row['gpu']], '--gpus', str(row['gpus']),
           '--model', model_file, '--stack', args.stack, '--global-batch', str(row['global_batch']),
           '--tp', '1', '--pp', '1', '--dp', str(row['gpus']), '--zero', '3',
           '--micro-batch', str(row['micro_batch']),
           '--recompute', 'full' if row['activation_checkpointing'] else 'none',
           '--format', 'json', '--top', '1']
    if args.gpu_file:
        cmd += ['--gpu', args.gpu_file]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        return None, out.stderr.strip().splitlines()[-1]
    best = json.loads(out.stdout)['plans'][0]
    return best['tokens_per_s'] / row['gpus'], None


def summary(label, errors):
    if not errors:
        return
    mean_abs = sum(abs(e) for e in errors) / len(errors)
    signed = sum(errors) / len(errors)
    print(f'{label:28s} rows {len(errors):3d}  mean |error| {mean_abs:5.1f}%  mean signed {signed:+6.1f}%')


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser()
    parser.add_argument('--trident', default=os.path.join(here, '..', '..', 'build', 'cli', 'trident'))
    # What the tables ran: the fsdp preset with llm-foundry's Triton FlashAttention.
    parser.add_argument('--stack', default=os.path.join(here, 'stacks', 'llm-foundry-2023.yaml'))
    parser.add_argument('--gpu-file', default='')
    parser.add_argument('--only', default='', help='rows of this GPU preset only (h100-sxm-80g, a100-sxm-80g)')
    parser.add_argument('--data', default=os.path.join(here, 'llm_foundry_2023_tables.yaml'))
    args = parser.parse_args()
    doc = yaml.safe_load(open(args.data))
    errors = {}
    with tempfile.TemporaryDirectory() as tmp:
        for row in doc['rows']:
            if args.only and row['gpu'] != args.only:
                continue
            d_model, layers, heads = doc['models'][row['model']]
            model = {'name': f"mpt-{row['model']}", 'layers': layers, 'hidden': d_model, 'heads': heads,
                     'ffn_hidden': 4 * d_model, 'ffn': 'gelu', 'vocab': 50368, 'seq_len': row['seq_len'],
                     'tied_embeddings': True, 'training': {'dtype': 'bf16'}}
            model_file = os.path.join(tmp, f"{row['model']}-{row['seq_len']}.yaml")
            with open(model_file, 'w') as f:
                yaml.safe_dump(model, f)
            predicted, problem = plan(args, row, model_file)
            name = f"{row['gpu']} {row['model']} s{row['seq_len']} x{row['gpus']}"
            if problem:
                print(f'{name:34s} not planned: {problem}')
                continue
            error = 100.0 * (predicted / row['tokens_per_s_per_gpu'] - 1.0)
            print(f"{name:34s} mb {row['micro_batch']:3d} AC {str(row['activation_checkpointing']):5s} "
                  f"measured {row['tokens_per_s_per_gpu']:7d} predicted {predicted:9.0f} {error:+6.1f}%")
            band = '<=4k' if row['seq_len'] <= 4096 else '8k-16k' if row['seq_len'] <= 16384 else '>=32k'
            errors.setdefault(row['gpu'], []).append(error)
            errors.setdefault(f"{row['gpu']} {band}", []).append(error)
    for label in sorted(errors):
        summary(label, errors[label])
    return 0


if __name__ == '__main__':
    sys.exit(main())
