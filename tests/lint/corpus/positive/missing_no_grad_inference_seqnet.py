# source: https://github.com/serend1p1ty/SeqNet/pull/14
# "fixed the CUDA out of memory": the inference code ran the model with the autograd graph enabled.


def evaluate_performance(model, gallery_loader, device):
    model.eval()
    gallery_feats = []
    for images, targets in gallery_loader:
        images = [img.to(device) for img in images]
        outputs = model(images)  # expect: missing-no-grad
        for output in outputs:
            gallery_feats.append(output["embeddings"].cpu().numpy())
    return gallery_feats
