# source: https://github.com/facebookresearch/SlowFast/issues/109
# perform_test has no torch.no_grad(); adding it cut GPU memory drastically.


def perform_test(test_loader, model, test_meter):
    model.eval()
    for cur_iter, (inputs, labels, video_idx, meta) in enumerate(test_loader):
        inputs = [x.cuda(non_blocking=True) for x in inputs]
        preds = model(inputs)  # expect: missing-no-grad
        test_meter.update_stats(preds.detach().cpu(), labels, video_idx)
    return test_meter
