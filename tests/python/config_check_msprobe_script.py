"""The training of config_check_train_script.py packed by msprobe's own ConfigChecker (the live
interop test in test_config_check.py): python config_check_msprobe_script.py LR SEED PACK SCRIPT"""
import random
import sys

import numpy as np
import torch
from msprobe.core.config_check import ConfigChecker

ConfigChecker.apply_patches("pytorch")
lr, seed, pack, script = float(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
random.seed(seed)
np.random.seed(seed)
torch.manual_seed(seed)
torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))
ConfigChecker(model=model, shell_path=[script], output_zip_path=pack, fmk="pytorch")
optimizer = torch.optim.SGD(model.parameters(), lr=lr)
for step in range(3):
    loss = model(torch.randn(5, 8)).square().mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
