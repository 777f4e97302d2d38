#!/usr/bin/env bash
# clocktrain against the PyTorch 2 a user installs from PyPI, eager and torch.compile: the shared
# loop of bench/train_throughput.sh with TORCH=venv (its header gives the arguments, the variables
# and what is printed).
#
# usage: bench/torch2_throughput.sh [THREADS] [ROUNDS] [CLOCK]   (defaults: every core, 2 rounds, wall)
# env:   BUILD RECIPES PRECISIONS MODES TORCH2_VENV, as bench/train_throughput.sh
TORCH=venv exec "$(dirname "$0")/train_throughput.sh" "$@"
