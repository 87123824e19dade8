# source: https://repository.mulesoft.org/nexus/content/repositories/public/org/green-code-initiative/creedengo-rules-specifications/2.5.0/creedengo-rules-specifications-2.5.0-python.jar:/tmp/tarfile_extract_1mqy19la/org/green-code-initiative/rules/python/GCI100.html
# Rule GCI100: a model in eval mode still tracks gradients unless the inference loop is wrapped in torch.no_grad().


def run(model, dataloader):
    model.eval()
    results = []
    for inputs in dataloader:
        outputs = model(inputs)  # expect: missing-no-grad
        results.append(outputs.argmax(dim=1).tolist())
    return results
