# A GAN training loop in the usual style: the critic sees detached fakes, losses are kept as numbers,
# previews are drawn under no_grad. Nothing here should be reported.
import torch
from torch import nn


def train_gan(generator, critic, loader, opt_g, opt_c, epochs, latent_dim, device, preview_every=200):
    bce = nn.BCEWithLogitsLoss()
    history = {"generator": [], "critic": []}
    previews = []
    fixed_z = torch.randn(16, latent_dim, device=device)
    step = 0
    for _ in range(epochs):
        for images, _labels in loader:
            images = images.to(device)
            batch = images.shape[0]
            real = torch.ones(batch, device=device)
            fake_target = torch.zeros(batch, device=device)

            critic.zero_grad()
            z = torch.randn(batch, latent_dim, device=device)
            generated = generator(z)
            critic_loss = bce(critic(images).view(-1), real) + bce(critic(generated.detach()).view(-1), fake_target)
            critic_loss.backward()
            opt_c.step()

            generator.zero_grad()
            generator_loss = bce(critic(generated).view(-1), real)
            generator_loss.backward()
            opt_g.step()

            history["critic"].append(critic_loss.item())
            history["generator"].append(generator_loss.item())
            if step % preview_every == 0:
                with torch.no_grad():
                    previews.append(generator(fixed_z).cpu())
            step += 1
    return history, previews
