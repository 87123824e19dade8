# source: https://github.com/huggingface/sentence-transformers/pull/1920
# PR empties the GPU cache after every chunk in each worker; closed because empty_cache is not recommended there.
import torch


def encode_multi_process_worker(model, input_queue, results_queue):
    while True:
        chunk_id, sentences = input_queue.get()
        with torch.no_grad():
            embeddings = model.encode(sentences, convert_to_numpy=True)
        torch.cuda.empty_cache()  # expect: empty-cache-in-loop
        results_queue.put([chunk_id, embeddings])
