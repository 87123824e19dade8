# Training and evaluation with Hugging Face Accelerate in the usual style. Nothing here should be reported.
import torch
from accelerate import Accelerator


def fit(model, optimizer, train_loader, eval_loader, epochs):
    accelerator = Accelerator()
    model, optimizer, train_loader, eval_loader = accelerator.prepare(model, optimizer, train_loader, eval_loader)
    for _ in range(epochs):
        model.train()
        seen_loss = 0.0
        for batch in train_loader:
            loss = model(**batch).loss
            seen_loss += loss.detach().float()
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
        model.eval()
        gathered = []
        correct = 0
        for batch in eval_loader:
            with torch.no_grad():
                out = model(**batch)
            gathered.append(accelerator.gather_for_metrics(out.loss.reshape(1)))
            correct += (out.logits.argmax(dim=-1) == batch["labels"]).sum().item()
        eval_loss = torch.cat(gathered).mean().item()
        accelerator.print(f"train {float(seen_loss):.3f} eval {eval_loss:.3f} correct {correct}")
