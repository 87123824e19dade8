# source: https://github.com/batra-mlp-lab/visdial-challenge-starter-pytorch/pull/34
# "Code Speedup": empty_cache() after every batch was moved to after every epoch.
import torch


def train(model, criterion, optimizer, train_dataloader, num_epochs):
    for epoch in range(num_epochs):
        for i, batch in enumerate(train_dataloader):
            optimizer.zero_grad()
            output = model(batch)
            batch_loss = criterion(output.view(-1, output.size(-1)), batch["ans_ind"].view(-1))
            batch_loss.backward()
            optimizer.step()
            torch.cuda.empty_cache()  # expect: empty-cache-in-loop
