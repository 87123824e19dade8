# source: https://github.com/pytorch/pytorch/issues/40005
# Distilling BERT layer by layer with output.backward(retain_graph=True) in a loop runs out of memory; autograd.grad is recommended.
import torch
import torch.nn.functional as F


def distill_step(t_model, s_model, inputs, encoder_layers):
    t_outputs = t_model(**inputs)
    s_outputs = s_model(**inputs)
    kl = torch.nn.KLDivLoss(reduction="batchmean")
    for i, k in enumerate(encoder_layers):
        output = kl(F.log_softmax(s_outputs[3][i + 1], dim=-1), F.softmax(t_outputs[3][k + 1], dim=-1))
        output.backward(retain_graph=True)  # expect: retain-graph-in-loop
