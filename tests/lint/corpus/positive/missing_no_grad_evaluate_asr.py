# source: https://github.com/gentaiscool/end2end-asr-pytorch/pull/41
# "Fix OOM issue during validation": no need to store gradients while evaluating.


def evaluate(model, test_loader, lm=None):
    model.eval()
    total_cer = 0
    for i, data in enumerate(test_loader):
        src, tgt, src_percentages, src_lengths, tgt_lengths = data
        src = src.cuda()
        tgt = tgt.cuda()
        pred, gold, hyp_seq, gold_seq = model(src, src_lengths, tgt, verbose=False)  # expect: missing-no-grad
        total_cer += sum(int(h != g) for h, g in zip(hyp_seq, gold_seq))
    return total_cer
