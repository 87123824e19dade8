# source: https://github.com/GBLin5566/toward-controlled-generation-of-text-pytorch/issues/9
# Keep the graph only for backward passes before the last one: two heads over range(2), graph freed after the second.


def per_head_grads(model, x):
    outputs = model(x)
    grads = []
    for k in range(2):
        model.zero_grad()
        outputs[k].sum().backward(retain_graph=(k == 0))
        grads.append([p.grad.detach().clone() for p in model.parameters()])
    return grads
