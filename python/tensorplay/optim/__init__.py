"""tensorplay.optim: optimizers, learning-rate schedulers (lr_scheduler) and weight
averaging (swa_utils), with torch.optim's API.

    opt = tp.optim.AdamW(model.parameters(), lr=1e-3)
    sched = tp.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=100)
"""
from tensorplay.optim import lr_scheduler, swa_utils  # noqa: F401
from tensorplay.optim.adadelta import Adadelta
from tensorplay.optim.adafactor import Adafactor
from tensorplay.optim.adagrad import Adagrad
from tensorplay.optim.adam import Adam
from tensorplay.optim.adamax import Adamax
from tensorplay.optim.adamw import AdamW
from tensorplay.optim.asgd import ASGD
from tensorplay.optim.lbfgs import LBFGS
from tensorplay.optim.muon import Muon
from tensorplay.optim.nadam import NAdam
from tensorplay.optim.optimizer import Optimizer
from tensorplay.optim.radam import RAdam
from tensorplay.optim.rmsprop import RMSprop
from tensorplay.optim.rprop import Rprop
from tensorplay.optim.sgd import SGD
from tensorplay.optim._stateless import swap_in_optimizer_params_and_state

__all__ = ["ASGD", "Adadelta", "Adafactor", "Adagrad", "Adam", "AdamW", "Adamax", "LBFGS", "Muon", "NAdam", "Optimizer", "RAdam",
           "RMSprop", "Rprop", "SGD", "lr_scheduler", "swa_utils", "swap_in_optimizer_params_and_state"]
