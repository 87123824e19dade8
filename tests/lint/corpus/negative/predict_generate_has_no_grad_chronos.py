# source: https://github.com/amazon-science/chronos-forecasting/pull/184
# A PR adding no_grad() to predict() was withdrawn: model.generate already runs under no_grad, and a benchmark showed no effect.


class ChronosPipeline:
    def __init__(self, model, tokenizer):
        self.model = model
        self.tokenizer = tokenizer

    def predict(self, context, prediction_length, num_samples=20):
        token_ids, attention_mask, scale = self.tokenizer.context_input_transform(context)
        samples = self.model.generate(
            input_ids=token_ids,
            attention_mask=attention_mask,
            max_new_tokens=prediction_length,
            num_return_sequences=num_samples,
        )
        return self.tokenizer.output_transform(samples, scale)
