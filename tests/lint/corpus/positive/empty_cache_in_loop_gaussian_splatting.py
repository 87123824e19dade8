# source: https://github.com/graphdeco-inria/gaussian-splatting/issues/85
# Proposal to call torch.cuda.empty_cache() in each iteration of the main training loop (later withdrawn).
import torch


def training(gaussians, scene, render, loss_fn, iterations):
    for iteration in range(1, iterations + 1):
        viewpoint_cam = scene.next_camera()
        image = render(viewpoint_cam, gaussians)
        loss = loss_fn(image, viewpoint_cam.original_image)
        loss.backward()
        gaussians.optimizer.step()
        gaussians.optimizer.zero_grad(set_to_none=True)
        torch.cuda.empty_cache()  # expect: empty-cache-in-loop
