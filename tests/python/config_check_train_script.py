"""A small training run packed by numprobe.ConfigChecker (tests/python/test_config_check.py):
python config_check_train_script.py --lr 0.1 --seed 1 --pack out.zip [--script run.sh]"""
import argparse
import random

import numpy as np
import torch

import numprobe

numprobe.ConfigChecker.apply_patches()

parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=0.1)
parser.add_argument("--seed", type=int, default=1)
parser.add_argument("--steps", type=int, default=3)
parser.add_argument("--pack", required=True)
parser.add_argument("--script", default=None)
args = parser.parse_args()

random.seed(args.seed)
np.random.seed(args.seed)
torch.manual_seed(args.seed)
torch.set_num_threads(1)

model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))
checker = numprobe.ConfigChecker(model=model, shell_path=[args.script] if args.script else None,
                                 output_zip_path=args.pack, hyperparameters=args)
optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
for step in range(args.steps):
    x = torch.randn(5, 8)
    order = np.random.permutation(5)
    y = torch.randn(5, 4)[torch.from_numpy(order)]
    loss = torch.nn.functional.mse_loss(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
# the pack is written at exit
