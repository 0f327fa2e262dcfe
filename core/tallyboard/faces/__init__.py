"""The faces people already know: SummaryWriter (torch.utils.tensorboard), SummaryRecord and its
summary operators (MindSpore). The torch.monitor face is :mod:`tallyboard.monitor`."""
