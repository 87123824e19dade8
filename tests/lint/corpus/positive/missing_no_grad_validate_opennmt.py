# source: https://github.com/OpenNMT/OpenNMT-py/issues/1141
# Trainer.validate() lost its no_grad during the 0.4 to 1.0 migration; maintainers asked for the memory reduction numbers.
import onmt


class Trainer:
    def __init__(self, model, valid_loss):
        self.model = model
        self.valid_loss = valid_loss

    def validate(self, valid_iter):
        self.model.eval()
        stats = onmt.utils.Statistics()
        for batch in valid_iter:
            src, tgt, src_lengths = batch.src, batch.tgt, batch.src_lengths
            outputs, attns = self.model(src, tgt, src_lengths)  # expect: missing-no-grad
            batch_stats = self.valid_loss.monolithic_compute_loss(batch, outputs, attns)
            stats.update(batch_stats)
        self.model.train()
        return stats
